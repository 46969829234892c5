/**
 * Where the incremental state is kept (its rule is src/pipeline/watermark.ts's): one small
 * object per study, state/<permanent study id>.json, beside the runs (in the folder or the
 * bucket), so an ephemeral machine needs nothing but the output, and runs that export
 * different studies never write the same object. `--state FILE` keeps the whole state in that
 * one JSON file instead (the format of an earlier version's state.json), wherever it is. What
 * earlier versions left (a state.json beside the runs, objects under an earlier naming rule) is
 * read and retired by src/upgrade/ (EarlierState).
 */
import { z } from 'zod';
import { StudySchema } from '../drift/schema.ts';
import { ConfigError } from '../errors.ts';
import { nameOf } from '../names.ts';
import { STATE_DIR } from '../output/layout.ts';
import { isObjectStorage, openStorage } from '../storage/index.ts';
import { LocalStorage } from '../storage/local.ts';
import type { Storage } from '../storage/types.ts';
import { isTimestamp } from '../util/timestamp.ts';

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
  /** When a run last compared the study's whole listing with current/ (src/pipeline/reconcile.ts). */
  reconciled_at: Instant.optional(),
  /**
   * What the service's payloads of this study looked like as of `last_run` (src/drift/): the
   * next run reports what changed since. Absent until a run records it (reports nothing then).
   */
  schema: StudySchema.optional(),
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

export interface StateStore {
  /** Where the state is, for messages. */
  readonly location: string;
  read(): Promise<State>;
  /** Stores `next`; `previous` is what read() returned, so only changed studies are written. */
  write(previous: State, next: State): Promise<void>;
}

/**
 * What earlier versions left of the state beside the runs (src/upgrade/ reads and retires it):
 * the store tells it what it meets and asks it what to add and to write.
 */
export interface EarlierState {
  /** A read begins: what the last one found is forgotten. */
  reading(): void;
  /** An object found under another path than its study's (an earlier naming rule). */
  misnamed(studyId: string, path: string): void;
  /** Adds the entries of studies with no object yet (a state.json of before). */
  addTo(state: State): Promise<void>;
  /** Whether the study's object must be written even when its entry did not change. */
  mustWrite(studyId: string): boolean;
  /** Once the objects of `written` are written: what they replace goes. */
  retire(written: readonly string[]): Promise<void>;
}

/**
 * state/<study id>.json in the pipeline's storage, with what `earlier` versions left. With
 * `owns` (a shard's studies), only those studies' objects are ever written.
 */
export function studyStateStore(
  pipeline: Storage,
  earlier?: EarlierState,
  options: { owns?: (studyId: string) => boolean } = {},
): StateStore {
  const owns = options.owns ?? (() => true);
  return {
    location: pipeline.describe(STATE_DIR),
    async read() {
      const state = emptyState();
      earlier?.reading();
      const owned = new Set<string>();
      for await (const file of pipeline.list(STATE_DIR)) {
        if (!file.path.endsWith('.json')) continue;
        const path = `${STATE_DIR}/${file.path}`;
        const study = parseStudyObject(pipeline.describe(path), await pipeline.read(path));
        if (!study) continue;
        const { version: _v, study_id, ...entry } = study;
        if (path === studyObjectPath(study_id)) {
          owned.add(study_id);
          state.studies[study_id] = entry;
        } else {
          earlier?.misnamed(study_id, path);
          // Its own object, where there is one as well, is the newer: it was written by this rule.
          if (!owned.has(study_id)) state.studies[study_id] = entry;
        }
      }
      await earlier?.addTo(state);
      return state;
    },
    async write(previous, next) {
      // One object per study, each whole: written at once, in any order.
      const changed = Object.entries(next.studies).filter(([id, entry]) => {
        const before = previous.studies[id];
        const differs = !before || JSON.stringify(before) !== JSON.stringify(entry);
        return owns(id) && (earlier?.mustWrite(id) || differs);
      });
      await Promise.all(
        changed.map(([id, entry]) => {
          const object = { version: 1, study_id: id, ...entry };
          return pipeline.put(studyObjectPath(id), `${JSON.stringify(object, null, 2)}\n`);
        }),
      );
      await earlier?.retire(changed.map(([id]) => id));
    },
  };
}

/** The object of one study, named by the one encoding of ids (src/names.ts). */
export function studyObjectPath(studyId: string): string {
  return `${STATE_DIR}/${nameOf(studyId)}.json`;
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

/**
 * Writes the state entries a committed run advanced. Shards read the state again: others may
 * have written their studies meanwhile.
 */
export async function writeStateEntries(
  stateStore: StateStore,
  entries: Record<string, StudyState>,
  startState?: State,
): Promise<void> {
  const base = startState ?? (await stateStore.read());
  await stateStore.write(base, { ...base, studies: { ...base.studies, ...entries } });
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

export function parseStateFile(path: string, text: Buffer): State {
  return parseState(StateFile, path, text);
}

export function parseStudyObject(path: string, text: Buffer | null): z.infer<typeof StudyStateObject> | null {
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

/** The state kept in a local pipeline folder (out/<name>/state/). */
export function readPipelineState(pipelineDir: string): Promise<State> {
  return studyStateStore(new LocalStorage(pipelineDir)).read();
}
