/**
 * A format added to output.formats (or --formats) after current/ was written: filled in for
 * what current/ holds from its own Parquet parts (current/formats.ts), never by asking the
 * service again, then current/datapackage.json (and, where the run writes no guide of its own,
 * current/README.md and report.html) written again to list the new files. A committed run does
 * it once current/ is settled; a run with nothing new does it under the lease it then takes, so
 * adding xlsx to a pipeline whose service has not changed still gives every study its workbook.
 */
import type { PipelineConfig } from '../config/schema.ts';
import {
  descriptorShard,
  type FormatsFilled,
  fillFormatGaps,
  findFormatGaps,
  hasGaps,
  writeCurrentDescriptor,
  writeCurrentGuide,
} from '../current/index.ts';
import { studyIdIn } from '../output/formats/parquet-read.ts';
import { shardNames } from '../output/layout.ts';
import { inShard, type Shard, shardOfBucket } from '../shard.ts';
import type { Storage } from '../storage/types.ts';
import { openScratch, scratchFull } from '../util/scratch.ts';
import { openPipelineDirectory } from './run-dir.ts';

interface AddedFormatsInput {
  storage: Storage;
  config: PipelineConfig;
  shard: Shard | undefined;
  scratchDir: string;
  /** The run its pointer names once this run is done: what the descriptor is as of. */
  runId: string | null;
}

/** Fills what current/ lacks of the pipeline's formats; null when it lacked nothing. Under the lease. */
export async function fillAddedFormats(input: AddedFormatsInput): Promise<FormatsFilled | null> {
  const { storage, config } = input;
  const gaps = await findFormatGaps(storage, config.output.formats, owned(input.shard));
  if (!hasGaps(gaps)) return null;
  const filled = await fillFormatGaps(storage, gaps, {
    csv: config.output.csv,
    scratchDir: input.scratchDir,
  });
  // A shard writes its own descriptor only (descriptor.ts).
  await writeCurrentDescriptor({
    store: storage,
    name: config.name,
    formats: config.output.formats,
    baseUrl: config.source.base_url,
    shard: descriptorShard(input.shard),
    runs: { [shardNames(input.shard).latest]: input.runId },
  });
  return filled;
}

/**
 * For a run that found nothing new and holds no lease: when current/ lacks a format, takes the
 * lease and a scratch folder, fills it, and writes current/'s guide again (naming `runId`, the
 * run that last updated current/). Null when nothing was missing.
 */
export async function fillAddedFormatsAlone(
  input: Omit<AddedFormatsInput, 'scratchDir'>,
): Promise<FormatsFilled | null> {
  const { storage, config } = input;
  // A look first, without the lease: a night with nothing new and nothing missing stays a look.
  if (!hasGaps(await findFormatGaps(storage, config.output.formats, owned(input.shard)))) return null;
  const scratch = await openScratch().catch((error: unknown) => {
    throw scratchFull(error) ?? error;
  });
  try {
    const pipelineDir = await openPipelineDirectory(storage, { shard: input.shard });
    try {
      const filled = await fillAddedFormats({ ...input, scratchDir: scratch.dir });
      // current/'s guide is all of current/'s: a shard leaves it to `describe`.
      if (filled && input.runId !== null && !input.shard)
        await writeCurrentGuide(storage, config, input.runId);
      return filled;
    } finally {
      await pipelineDir.release();
    }
  } finally {
    await scratch.remove();
  }
}

/** A shard fills only its own buckets and studies (shard.ts). */
function owned(shard: Shard | undefined) {
  return {
    bucket: (folder: string) => {
      if (!shard) return true;
      const bucket = Number(folder.slice('bucket='.length));
      return shardOfBucket(bucket, shard.count) === shard.index;
    },
    study: (folder: string) => {
      const id = studyIdIn(`${folder}/`);
      return id !== null && inShard(id, shard);
    },
  };
}
