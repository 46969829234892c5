/**
 * Which studies a run covers, and the dry run's plan. The study list is read before
 * anything is written, so a wrong key or an unreachable host leaves no trace on disk.
 */
import { join } from 'node:path';
import pLimit from 'p-limit';
import type { ApiClient } from '../api/client.ts';
import { responseCountInDesc, type Study } from '../api/resources.ts';
import type { PipelineConfig } from '../config/schema.ts';
import { AuthError, StudyExportError } from '../errors.ts';
import { listResponses, listStudies, selectStudies } from '../extract/index.ts';
import type { ExtractSinks, RawRecord, Reject, Warning } from '../records.ts';
import { openScratch } from '../util/scratch.ts';
import { inShard } from './shard.ts';
import { effectiveSince, type State } from './state.ts';
import type { DryRunPlan, RunOptions } from './types.ts';

/** The selected studies, and what listing them produced, to be recorded once a run exists. */
export interface StudyListing {
  studies: Study[];
  raw: RawRecord[];
  rejects: Reject[];
  warnings: Warning[];
}

export async function listSelectedStudies(
  client: ApiClient,
  config: PipelineConfig,
  state: State,
  options: RunOptions,
): Promise<StudyListing> {
  const listing: StudyListing = { studies: [], raw: [], rejects: [], warnings: [] };
  const all = await listStudies(client, {
    raw: { write: (record) => listing.raw.push(record) },
    rejects: { write: (reject) => listing.rejects.push(reject) },
    warn: (warning) => listing.warnings.push(warning),
  });
  const known = new Map(Object.entries(state.studies).map(([id, study]) => [id, study.link_id]));
  const only = options.studies && options.studies.length > 0 ? options.studies : undefined;
  listing.studies = selectStudies(
    all,
    { include: config.studies.include, exclude: config.studies.exclude, only },
    known,
  ).filter((study) => inShard(study.id, options.shard));
  return listing;
}

/** updated_since for one study of this run. */
export function sinceFor(
  study: Study,
  state: State,
  options: RunOptions,
  config: PipelineConfig,
): string | null {
  return effectiveSince(state.studies[study.id], {
    ...options,
    incremental: config.incremental,
    media: config.media.enabled,
  });
}

/**
 * The dry run's plan. A study's desc counts all its responses, which is not what an
 * incremental run exports: for a study listed from a watermark, its changes are listed now
 * (pages only, no details, so one request when nothing changed) and counted as the run
 * would count them (distinct valid ids).
 */
export async function dryRunPlan(
  client: ApiClient,
  studies: Study[],
  state: State,
  options: RunOptions,
  config: PipelineConfig,
  sinks: ExtractSinks,
): Promise<DryRunPlan> {
  const scratch = await openScratch();
  try {
    const limit = pLimit(STUDIES_LISTED_AT_ONCE);
    const planned = await Promise.all(
      studies.map((study) =>
        limit(async () => {
          const since = sinceFor(study, state, options, config);
          return {
            study_id: study.id,
            link_id: study.link_id,
            title: study.title,
            expected_responses: responseCountInDesc(study.desc),
            since,
            changed:
              since === null ? null : await countChanged(client, study, since, config, scratch.dir, sinks),
          };
        }),
      ),
    );
    return {
      base_url: config.source.base_url,
      studies: planned,
      media: config.media.enabled,
      formats: config.output.formats,
      out: join(config.output.dir, config.name),
      shard: options.shard ?? null,
      sample: options.limit === undefined ? null : { limit: options.limit },
    };
  } finally {
    await scratch.remove();
  }
}

const STUDIES_LISTED_AT_ONCE = 3;

/**
 * Responses listed since `since`, as the run would export them (distinct valid ids); null
 * when the listing failed (the warning says why).
 */
async function countChanged(
  client: ApiClient,
  study: Study,
  since: string,
  config: PipelineConfig,
  scratchDir: string,
  sinks: ExtractSinks,
): Promise<number | null> {
  const listing = listResponses(
    client,
    study,
    {
      perPage: config.source.per_page,
      updatedSince: since,
      includeInProgress: config.source.include_in_progress,
      spillDir: scratchDir,
      maxPages: config.source.max_pages,
    },
    sinks,
  );
  try {
    // The count is known once paging ends, before the first item comes out.
    for await (const _ of listing) break;
  } catch (error) {
    if (error instanceof AuthError || !(error instanceof StudyExportError)) throw error;
    sinks.warn({ code: 'study_failed', message: error.message, study_id: study.id, link_id: study.link_id });
    return null;
  }
  return listing.stats.unique;
}

/** The details stage's expected total: desc counts for full exports, unknown when incremental. */
export function expectedResponses(
  studies: Study[],
  state: State,
  options: RunOptions,
  config: PipelineConfig,
): number | undefined {
  let total = 0;
  for (const study of studies) {
    if (sinceFor(study, state, options, config) !== null) return undefined;
    total += Math.min(responseCountInDesc(study.desc) ?? 0, options.limit ?? Number.POSITIVE_INFINITY);
  }
  return total;
}
