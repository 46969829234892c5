/**
 * The output's layout: every path of an output (out/<name>/ or s3://bucket/prefix/<name>/),
 * declared once, with the functions that build and parse them. Whoever writes or reads an
 * output names its files from here; docs/architecture.md draws the tree.
 *
 *     latest, latest-shard-K-of-N      the run a pipeline (or a shard) last committed
 *     .lock, .lock-shard-K-of-N        the lease
 *     .pending/<run id>.json           a run being published (src/publish/record.ts)
 *     source.json, sources/shard-K-of-N.json    the service the output belongs to
 *     state/<permanent study id>.json  the watermarks
 *     current/                         the current dataset (src/current/)
 *     runs/<run id>/                   a run: manifest.json, datapackage.json, the tables, …
 *     runs/.erase-<erasure>-<run id>/  the run's new files while an erasure stages them
 *     runs/.erased-<erasure>-<run id>/ the run as it was, set aside until the switch is done
 *     erasures/                        what each erasure did (src/erase/record.ts)
 *
 * A run id is `<UTC time>[-n][-sample][-shard-K-of-N]` (src/run-id.ts orders them). How a file
 * is written whole (a folder's hidden `.writing` names and runs/.tmp-<id>, a bucket's .staged/
 * markers) is the storage's own (src/storage/), below this room, and never read by anyone else.
 */
import { parseShard, type Shard, shardLabel } from '../shard.ts';

export const RUNS_DIR = 'runs';
export const STATE_DIR = 'state';
export const CURRENT_DIR = 'current';
/** Where a run's commit record waits while the run is being published. */
export const PENDING_DIR = '.pending';
export const SOURCE_FILE = 'source.json';
/** The shards' own records of the service. */
export const SOURCES_DIR = 'sources';

// The files of a run.
/** Written last: on object storage, a run without its manifest is not a run. */
export const MANIFEST_FILE = 'manifest.json';
export const DATAPACKAGE_FILE = 'datapackage.json';
export const MEDIA_ZIP = 'media.zip';
export const RAW_DIR = 'raw';
export const REJECTS_FILE = 'rejects.jsonl';
/** The codebook: a run's (and current/'s) README.md. */
export const CODEBOOK_FILE = 'README.md';
export const REPORT_FILE = 'report.html';

/** Ends the id of a sample run (before a shard's suffix), so runs/ shows which runs are samples. */
export const SAMPLE_RUN_SUFFIX = '-sample';

/** runs/<id>, or a file in it. */
export function runPath(runId: string, file?: string): string {
  return file === undefined ? `${RUNS_DIR}/${runId}` : `${RUNS_DIR}/${runId}/${file}`;
}

/**
 * The folder an erasure writes a run's new files into (src/erase/switch.ts), renamed into
 * place once complete; the erasure id is a run id of the erasure's time.
 */
export function erasingRunName(erasureId: string, runId: string): string {
  return `.erase-${erasureId}-${runId}`;
}

/** The folder a run is set aside as while an erasure switches it. */
export function erasedRunName(erasureId: string, runId: string): string {
  return `.erased-${erasureId}-${runId}`;
}

const ERASING = /^\.erase-(\d{8}T\d{6}Z(?:-\d+)?)-(.+)$/;

/** The erasure and the run of a folder named by `erasingRunName`; null for any other name. */
export function parseErasingRunName(name: string): { erasureId: string; runId: string } | null {
  const match = ERASING.exec(name);
  return match ? { erasureId: match[1] as string, runId: match[2] as string } : null;
}

/** A payload file of raw/: raw/<name>.jsonl.gz. */
export function isRawFile(path: string): boolean {
  return /^raw\/[^/]+\.jsonl\.gz$/.test(path);
}

/** .pending/<run id>.json. */
export function pendingPath(runId: string): string {
  return `${PENDING_DIR}/${runId}.json`;
}

/** The run id of a file listed under .pending/ (its path relative to it); null for anything else. */
export function pendingRunId(name: string): string | null {
  return name.endsWith('.json') && !name.includes('/') ? name.slice(0, -'.json'.length) : null;
}

/** state/<permanent study id>.json, from the study id's file name (src/names.ts). */
export function statePath(fileName: string): string {
  return `${STATE_DIR}/${fileName}.json`;
}

// Shards: a shard's run ids, lock, pointer, source record and current/ descriptor carry its label.

const LABEL = 'shard-(\\d+)-of-(\\d+)';
const LABEL_ALONE = new RegExp(`^${LABEL}$`);
const RUN_SUFFIX = new RegExp(`-${LABEL}$`);

/** What one shard (or the unsharded pipeline) names its own: lock, latest pointer, run id suffix. */
export interface ShardNames {
  lock: string;
  latest: string;
  /** '' unsharded, '-shard-2-of-3' for shard 2 of 3. */
  runSuffix: string;
}

export function shardNames(shard: Shard | undefined): ShardNames {
  if (!shard) return { lock: '.lock', latest: 'latest', runSuffix: '' };
  const label = shardLabel(shard);
  return { lock: `.lock-${label}`, latest: `latest-${label}`, runSuffix: `-${label}` };
}

/** "shard-2-of-3" as a shard; null for anything else. */
export function parseShardLabel(label: string): Shard | null {
  const match = LABEL_ALONE.exec(label);
  if (!match) return null;
  try {
    return parseShard(`${match[1]}/${match[2]}`);
  } catch {
    return null;
  }
}

/** The label of the shard a run id ends in (…-shard-K-of-N); null for an unsharded run. */
export function shardLabelOfRun(runId: string): string | null {
  const match = RUN_SUFFIX.exec(runId);
  return match ? `shard-${match[1]}-of-${match[2]}` : null;
}

/** Whether a run id is the shard's own (or, with runSuffix '', an unsharded run's). */
export function ownRun(runId: string, runSuffix: string): boolean {
  return runSuffix === '' ? shardLabelOfRun(runId) === null : runId.endsWith(runSuffix);
}

/** Where a shard (or an unsharded run) records the service. */
export function sourcePath(shard: Shard | undefined): string {
  return shard ? `${SOURCES_DIR}/${shardLabel(shard)}.json` : SOURCE_FILE;
}

export const CURRENT_DESCRIPTOR = `${CURRENT_DIR}/${DATAPACKAGE_FILE}`;

/** current/datapackage.json, or a shard's own current/datapackage-shard-K-of-N.json (by its label). */
export function currentDescriptorPath(label: string | undefined): string {
  return label ? `${CURRENT_DIR}/datapackage-${label}.json` : CURRENT_DESCRIPTOR;
}

const SHARD_DESCRIPTOR = new RegExp(`^datapackage-(${LABEL.replaceAll('(\\d+)', '\\d+')})\\.json$`);

/** The shard label of a shard's descriptor in current/ (its path relative to current/); null otherwise. */
export function shardOfCurrentDescriptor(name: string): string | null {
  return SHARD_DESCRIPTOR.exec(name)?.[1] ?? null;
}
