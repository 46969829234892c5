/**
 * Incremental state, keyed by permanent study id (link_ids can change): one small object per
 * study, state/<permanent study id>.json, beside the runs (in the folder or the bucket), so
 * an ephemeral machine needs nothing but the output, and runs that export different studies
 * never write the same object. A state.json from before is migrated on first use: its
 * studies are read as if they were objects, written as objects after the next committed
 * run, and the file is then kept as state.json.migrated. `--state FILE` keeps the whole
 * state in that one JSON file instead (the format of state.json), wherever it is.
 *
 * The watermark rule. A study's watermark is the run's start time minus WATERMARK_LAG_MS,
 * recorded only after the run is committed and only for studies that finished without
 * loss, the start time read on the earlier of two clocks: this machine's and the service's
 * (its Date header, src/api/client.ts ServiceClock). The service compares updated_since with
 * its own updated_at, so a service clock behind this machine's would otherwise put the
 * watermark after responses it stamps once the run is over, and they would never be listed;
 * a service clock ahead changes nothing (this machine's start is the earlier). The next run
 * lists that study with updated_since = watermark. Why this and not "the newest updated_at
 * seen":
 * - list items may lack updated_at (the spec's sample omits it), so "newest seen" can be
 *   unknowable, while the service still filters on its own updated_at;
 * - a response updated while the run pages through the list has updated_at after the run
 *   started, so the next run fetches it again;
 * - the lag absorbs what the Date header cannot tell (its one-second resolution, a service
 *   whose updated_at is stamped a little before it is visible).
 * The price is that responses updated in the lag window before a run are exported again
 * by the next run; rows are keyed by response_id, so the later run's copy supersedes.
 */
import { z } from 'zod';
import { ConfigError } from '../errors.ts';
import { nameOf } from '../names.ts';
import type { Warning } from '../records.ts';
import { isObjectStorage, openStorage } from '../storage/index.ts';
import { LocalStorage } from '../storage/local.ts';
import type { Storage } from '../storage/types.ts';
import {
  type Instant as At,
  compareInstants,
  isTimestamp,
  parseTimestamp,
  toIsoUtc,
} from '../util/timestamp.ts';

export const WATERMARK_LAG_MS = 15 * 60 * 1000;

/** An instant as the state holds it: ISO 8601 text (src/util/timestamp.ts). */
const Instant = z.string().refine(isTimestamp, { message: 'expected an ISO 8601 timestamp' });

export const StudyState = z.object({
  link_id: z.string(),
  /** ISO timestamp passed as updated_since on the next incremental run. */
  watermark: Instant.nullable(),
  /**
   * Up to where this study's recordings are archived: behind `watermark` after runs without
   * media, whose recordings are owed. Absent in state written before it existed (read as
   * `watermark`); null: owed from the beginning.
   */
  media_watermark: Instant.nullable().optional(),
  last_run: z.string(),
  last_run_at: z.string(),
});
export type StudyState = z.infer<typeof StudyState>;

const StateFile = z.object({
  version: z.literal(1),
  studies: z.record(z.string(), StudyState),
});
export type State = z.infer<typeof StateFile>;

/** One study's object: state/<permanent study id>.json. */
const StudyStateObject = StudyState.extend({ version: z.literal(1), study_id: z.string() });

export const emptyState = (): State => ({ version: 1, studies: {} });

/** The state file of before (and of --state). */
export const LEGACY_STATE_FILE = 'state.json';
export const STATE_FOLDER = 'state';

export interface StateStore {
  /** Where the state is, for messages. */
  readonly location: string;
  read(): Promise<State>;
  /** Stores `next`; `previous` is what read() returned, so only changed studies are written. */
  write(previous: State, next: State): Promise<void>;
}

/**
 * state/<study id>.json in the pipeline's storage, migrating a state.json found there. With
 * `owns` (a shard's studies), only those studies' objects are ever written, and a state.json
 * is read but left for an unsharded run to migrate: every shard would otherwise write it.
 */
export function studyStateStore(
  pipeline: Storage,
  options: { owns?: (studyId: string) => boolean } = {},
): StateStore {
  const owns = options.owns ?? (() => true);
  const migrates = options.owns === undefined;
  let migrating: Buffer | null = null;
  /** Objects found under another name than their study's (the earlier naming rule), by study. */
  let misnamed = new Map<string, string>();
  return {
    location: pipeline.describe(STATE_FOLDER),
    async read() {
      const state = emptyState();
      misnamed = new Map();
      const owned = new Set<string>();
      for await (const file of pipeline.list(STATE_FOLDER)) {
        if (!file.path.endsWith('.json')) continue;
        const path = `${STATE_FOLDER}/${file.path}`;
        const study = parseStudyObject(pipeline.describe(path), await pipeline.read(path));
        if (!study) continue;
        const { version: _v, study_id, ...entry } = study;
        if (path === studyObjectPath(study_id)) {
          owned.add(study_id);
          state.studies[study_id] = entry;
        } else {
          misnamed.set(study_id, path);
          // Its own object, where there is one as well, is the newer: it was written by this rule.
          if (!owned.has(study_id)) state.studies[study_id] = entry;
        }
      }
      const legacyFile = await pipeline.read(LEGACY_STATE_FILE);
      migrating = migrates ? legacyFile : null;
      if (legacyFile) {
        const legacy = parseStateFile(pipeline.describe(LEGACY_STATE_FILE), legacyFile);
        // An object already written wins: it is newer than the file it replaced.
        for (const [id, entry] of Object.entries(legacy.studies)) state.studies[id] ??= entry;
      }
      return state;
    },
    async write(previous, next) {
      // One object per study, each whole: written at once, in any order.
      const changed = Object.entries(next.studies).filter(([id, entry]) => {
        const before = previous.studies[id];
        const differs = !before || JSON.stringify(before) !== JSON.stringify(entry);
        return owns(id) && (migrating !== null || misnamed.has(id) || differs);
      });
      await Promise.all(
        changed.map(([id, entry]) => {
          const object = { version: 1, study_id: id, ...entry };
          return pipeline.put(studyObjectPath(id), `${JSON.stringify(object, null, 2)}\n`);
        }),
      );
      // An object under its earlier name goes once its study's own is written, and only while it
      // still holds that study: under the earlier rule another id could have written it since.
      for (const [id] of changed) {
        const old = misnamed.get(id);
        if (old === undefined) continue;
        const text = await pipeline.read(old);
        const held = text === null ? null : parseStudyObject(pipeline.describe(old), text);
        if (held?.study_id === id) await pipeline.delete(old);
        misnamed.delete(id);
      }
      if (migrating) {
        // Every study of the old file is an object now; the file is kept, renamed, not lost.
        await pipeline.put(`${LEGACY_STATE_FILE}.migrated`, migrating);
        await pipeline.delete(LEGACY_STATE_FILE);
        migrating = null;
      }
    },
  };
}

/** The object of one study, named by the one encoding of ids (src/names.ts). */
export function studyObjectPath(studyId: string): string {
  return `${STATE_FOLDER}/${nameOf(studyId)}.json`;
}

/** `--state FILE`: the whole state in one JSON file (the format of state.json), local or s3://. */
export async function stateFileStore(file: string): Promise<StateStore> {
  const cut = file.lastIndexOf('/');
  const folder = cut < 0 ? '.' : file.slice(0, cut) || '/';
  const name = file.slice(cut + 1);
  const storage = isObjectStorage(file) ? await openStorage(folder) : new LocalStorage(folder);
  return singleFileStateStore(storage, name);
}

/** The whole state in one JSON file `name` of `storage`. */
export function singleFileStateStore(storage: Storage, name: string): StateStore {
  const location = storage.describe(name);
  return {
    location,
    async read() {
      const text = await storage.read(name);
      return text === null ? emptyState() : parseStateFile(location, text);
    },
    async write(_previous, next) {
      await storage.put(name, `${JSON.stringify(next, null, 2)}\n`);
    },
  };
}

/** The state in a single state file (state.json's format). */
export async function readState(file: string): Promise<State> {
  return (await stateFileStore(file)).read();
}

/** The state kept in a local pipeline folder (out/<name>/state/, and a state.json not yet migrated). */
export function readPipelineState(pipelineDir: string): Promise<State> {
  return studyStateStore(new LocalStorage(pipelineDir)).read();
}

function parseJson(path: string, text: Buffer): unknown {
  try {
    return JSON.parse(text.toString('utf8'));
  } catch (cause) {
    throw new ConfigError(`${path}: state file is not valid JSON; fix it, or move it away to start over`, {
      context: { file: path },
      cause,
    });
  }
}

function parseStateFile(path: string, text: Buffer): State {
  return parseState(StateFile, path, text);
}

function parseStudyObject(path: string, text: Buffer | null): z.infer<typeof StudyStateObject> | null {
  return text === null ? null : parseState(StudyStateObject, path, text);
}

/** A state file or object as `schema` says it must be; anything else names the file. */
function parseState<T extends z.ZodType>(schema: T, path: string, text: Buffer): z.infer<T> {
  const result = schema.safeParse(parseJson(path, text));
  if (!result.success) {
    throw new ConfigError(
      `${path}: state file has an unexpected shape (${result.error.issues[0]?.message})`,
      { context: { file: path } },
    );
  }
  return result.data;
}

/** Where the study's archived recordings end (see StudyState.media_watermark). */
function mediaWatermark(previous: StudyState | undefined): string | null {
  if (previous === undefined) return null;
  return previous.media_watermark === undefined ? previous.watermark : previous.media_watermark;
}

/**
 * Where an incremental study starts: --since wins, --full or incremental:false mean none.
 * With media on, it starts where its archived recordings end when that is earlier: the
 * responses whose recordings a run without media skipped are listed again, and their
 * recordings fetched through fresh detail calls (fresh signed links).
 */
export function effectiveSince(
  previous: StudyState | undefined,
  options: { since?: string; full?: boolean; incremental: boolean; media: boolean },
): string | null {
  // Zone-less, it is UTC (as the service reads it), whatever this machine's zone.
  if (options.since) return toIsoUtc(options.since);
  if (options.full || !options.incremental) return null;
  const watermark = previous?.watermark ?? null;
  if (!options.media || watermark === null) return watermark;
  const media = mediaWatermark(previous);
  return media === null || earlier(media, watermark) ? media : watermark;
}

/**
 * The state after a committed run. A study moves only when it finished without loss, and
 * only when this run covered everything since its previous watermark (a --since later
 * than the stored watermark would otherwise skip the gap).
 */
export function advanceState(
  state: State,
  finished: { study_id: string; link_id: string; since: string | null; lossless: boolean }[],
  run: {
    id: string;
    startedAt: number;
    media: boolean;
    /** The service's clock minus this machine's (ServiceClock); null or absent when unknown. */
    serviceSkewMs?: number | null;
  },
): State {
  const next: State = { version: 1, studies: { ...state.studies } };
  const behind = Math.min(0, run.serviceSkewMs ?? 0);
  const watermark = new Date(run.startedAt + behind - WATERMARK_LAG_MS).toISOString();
  for (const study of finished) {
    const previous = state.studies[study.study_id];
    if (!study.lossless || !coversGap(study.since, previous?.watermark ?? null)) continue;
    // Recordings are archived up to the new watermark only by a run with media that covered
    // everything since they were last archived; otherwise they stay owed.
    const archived = run.media && coversGap(study.since, mediaWatermark(previous));
    next.studies[study.study_id] = {
      link_id: study.link_id,
      watermark,
      media_watermark: archived ? watermark : mediaWatermark(previous),
      last_run: run.id,
      last_run_at: new Date(run.startedAt).toISOString(),
    };
  }
  return next;
}

/**
 * A warning when the service's clock (its Date header) and this machine's differ by more than
 * the watermark's margin. The watermark is taken on the earlier of the two (advanceState), so
 * nothing is missed either way; the warning says which clock is off.
 */
export function clockSkewWarning(skewMs: number | null): Warning | null {
  if (skewMs === null || Math.abs(skewMs) <= WATERMARK_LAG_MS) return null;
  const minutes = Math.round(Math.abs(skewMs) / 60_000);
  const margin = Math.round(WATERMARK_LAG_MS / 60_000);
  const message =
    skewMs < 0
      ? `the service's clock is ${minutes} minutes behind this machine's (its Date header), beyond the ${margin}-minute margin: watermarks follow the service's clock, so what it stamps after this run is still listed by the next one. Check both clocks`
      : `the service's clock is ${minutes} minutes ahead of this machine's (its Date header), beyond the ${margin}-minute margin: watermarks follow this machine's clock, the earlier one, so nothing is missed, but the next run lists more again. Check both clocks`;
  return { code: 'service_clock_skew', message };
}

/** A listing from `since` covers everything after `mark` (null: from the beginning). */
function coversGap(since: string | null, mark: string | null): boolean {
  return since === null || (mark !== null && !earlier(mark, since));
}

/** `a` names an instant before `b` (ISO text of any precision, so not compared as strings). */
function earlier(a: string, b: string): boolean {
  return compareInstants(parseTimestamp(a) as At, parseTimestamp(b) as At) < 0;
}
