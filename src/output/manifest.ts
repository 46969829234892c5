import type { SchemaChange } from '../drift/schema.ts';
import { RunError } from '../errors.ts';
import type { Warning } from '../records.ts';
import { redact } from '../redact.ts';
import { LocalStorage } from '../storage/local.ts';
import type { Storage, StoredFile } from '../storage/types.ts';
import type { CsvOptions } from './formats/csv.ts';
import type { Format } from './formats/index.ts';
import { MANIFEST_FILE, parseErasingRunName, RUNS_DIR, runPath } from './layout.ts';

/** A file of the run with its size and sha256, as counted while it was written. */
export type ManifestFile = StoredFile;

/**
 * The pipeline file as the run read it: src/config/schema.ts's PipelineConfig, key for key,
 * with a base_url that never keeps user:password or a query. Named here by the keys readers of
 * an output use, since a manifest may be an earlier version's.
 */
export interface RecordedConfig {
  name: string;
  source: { base_url: string; [key: string]: unknown };
  output: { formats: readonly Format[]; csv: CsvOptions; [key: string]: unknown };
  media: { enabled: boolean; [key: string]: unknown };
  [key: string]: unknown;
}

export interface StudyOutcome {
  study_id: string;
  link_id: string;
  /** updated_since used for this study; null for a full export. */
  since: string | null;
  responses: number;
  rejects: number;
  media_failed: number;
  /** True when nothing was lost: the study's watermark may advance. */
  lossless: boolean;
  error: string | null;
}

/** What a run's reconcile found (src/pipeline/reconcile.ts); the ids it removed are in its deletions table. */
export interface ReconcileRecord {
  studies: {
    study_id: string;
    link_id: string;
    /** Responses current/ held for the study. */
    held: number;
    /** Responses the service listed; null when its listing was not whole. */
    listed: number | null;
    /** Held and no longer listed; null when the listing was not whole. */
    missing: number | null;
    /** Taken out of current/ by this run. */
    removed: number;
    outcome: 'removed' | 'none' | 'held_back' | 'incomplete';
  }[];
  /** Studies of the output the service no longer lists: reported, never removed. */
  unlisted: { study_id: string; link_id: string }[];
}

/** A sample run (`run --limit N`): at most N responses of each study. */
export interface Sample {
  /** Responses per study, at most. */
  limit: number;
}

export interface Manifest {
  tool: { name: string; version: string };
  run_id: string;
  pipeline: string;
  config_file: string;
  status: 'complete' | 'partial';
  started_at: string;
  finished_at: string;
  timings_ms: Record<string, number>;
  config: RecordedConfig;
  studies: StudyOutcome[];
  tables: Record<string, number>;
  files: ManifestFile[];
  requests: unknown;
  media: unknown;
  warnings: Warning[];
  rejects: { count: number; file: string };
  /** What changed on the service since the last committed run, per study (src/drift/). */
  schema_changes?: SchemaChange[];
  /**
   * Present (true) when schema.on_change is fail and the run was committed with its changes
   * because it was given --accept-schema-change.
   */
  schema_changes_accepted?: true;
  /** Present for a sample run (run --limit): not the whole export, and nothing else moved. */
  sample?: Sample;
  /** Present when the run reconciled (run --reconcile, incremental.reconcile_every). */
  reconcile?: ReconcileRecord;
}

/** Written last: on object storage, a run without its manifest is not a run. */
export async function writeManifest(run: Storage, manifest: Manifest): Promise<void> {
  await run.put(MANIFEST_FILE, `${JSON.stringify(manifest, null, 2)}\n`);
}

/** The config as it may be recorded: a base_url never keeps user:password or a query. */
export function publicConfig<Config extends RecordedConfig>(config: Config): Config {
  return { ...config, source: { ...config.source, base_url: redact(config.source.base_url) } };
}

/**
 * A run's manifest, from the run's folder; null when it has none (not a run, or one still
 * being written: the manifest is written last). One that cannot be read or parsed is a
 * RunError naming the file.
 */
export async function readManifest(run: Storage): Promise<Manifest | null> {
  const path = run.describe(MANIFEST_FILE);
  try {
    const text = await run.read(MANIFEST_FILE);
    return text === null ? null : (JSON.parse(text.toString('utf8')) as Manifest);
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new RunError(`${path}: cannot read the manifest (${reason}); the run's manifest is damaged`, {
      context: { file: path },
      cause,
    });
  }
}

/** The manifest of the run `runId` of a pipeline's output (rooted at the output). */
export async function readRunManifest(output: Storage, runId: string): Promise<Manifest | null> {
  return readManifest(output.at((await runFolder(output, runId)) ?? runPath(runId)));
}

/**
 * Where the run `runId` is: runs/<id>, or, in the instant an erasure switches it (two renames:
 * the run aside, the new one in) or after a kill there, its new files, complete, under the
 * staged name the next `erase` renames into place. Looked at again when both are missing (the
 * second rename fell between the two looks). Null when neither holds a manifest.
 */
export async function runFolder(output: Storage, runId: string): Promise<string | null> {
  for (let look = 0; look < 2; look++) {
    if ((await output.size(runPath(runId, MANIFEST_FILE))) !== null) return runPath(runId);
    for (const name of await output.listFolders(RUNS_DIR)) {
      if (parseErasingRunName(name)?.runId !== runId) continue;
      if ((await output.size(`${RUNS_DIR}/${name}/${MANIFEST_FILE}`)) !== null) {
        // The staged folder is complete; the run itself may have come back since.
        if ((await output.size(runPath(runId, MANIFEST_FILE))) !== null) return runPath(runId);
        return `${RUNS_DIR}/${name}`;
      }
    }
  }
  return null;
}

/**
 * A run folder named by its path (out/demo/runs/<id>) where it is now: under its staged name in
 * the instant an erasure switches it (`runFolder`; only a folder has that instant); else as given.
 */
export async function locateRunDir(location: string): Promise<string> {
  const match = /^(.*)[/\\]runs[/\\]([^/\\]+)[/\\]?$/.exec(location);
  if (!match || /^s3:\/\//i.test(location)) return location;
  const output = new LocalStorage(match[1] as string);
  const folder = await runFolder(output, match[2] as string).catch(() => null);
  return folder === null ? location : output.describe(folder);
}

/**
 * The ids of the runs under runs/ (committed or not), with those only an erasure's staged
 * folder holds in the instant of its switch (`runFolder`).
 */
export async function runIdsListed(output: Storage): Promise<string[]> {
  const ids = new Set<string>();
  for (const name of await output.listFolders(RUNS_DIR)) {
    if (!name.startsWith('.')) ids.add(name);
    else {
      const erasing = parseErasingRunName(name);
      if (erasing) ids.add(erasing.runId);
    }
  }
  return [...ids];
}
