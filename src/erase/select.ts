/**
 * Which responses an erasure takes, and where the output holds them: the ids asked for (or
 * those whose URL attribute KEY has VALUE), each run whose responses table holds any of them,
 * and the studies current/ holds them under. Reads only.
 */
import { currentHolders } from '../current/index.ts';
import { ConfigError, RunError } from '../errors.ts';
import { parseErasingRunName, RUNS_DIR } from '../output/layout.ts';
import { type Manifest, readManifest, runFolder } from '../output/manifest.ts';
import { compareRunIds } from '../run-id.ts';
import type { Storage } from '../storage/types.ts';
import type { TableName } from '../tables/index.ts';
import { unreadableFiles } from './run-files.ts';
import { tableFormatOf } from './table-formats.ts';

export interface AttributeChoice {
  key: string;
  value: string;
}

/** What the command line asks to erase. */
export type Choice = { responses: readonly string[] } | { attributes: readonly AttributeChoice[] };

export interface OutputRun {
  id: string;
  /** Where it is: runs/<id>, or the staged folder an erasure's switch left it in. */
  folder: string;
  manifest: Manifest;
}

/**
 * Committed runs (those with a manifest), oldest first: a run a kill left between the two
 * renames of an erasure's switch is found under its staged name (output/manifest.ts runFolder).
 */
export async function outputRuns(storage: Storage): Promise<OutputRun[]> {
  const names = await storage.listFolders(RUNS_DIR);
  const ids = new Set(
    names.flatMap((name) => (name.startsWith('.') ? (parseErasingRunName(name)?.runId ?? []) : [name])),
  );
  const runs: OutputRun[] = [];
  for (const id of [...ids].sort(compareRunIds)) {
    const folder = await runFolder(storage, id);
    const manifest = folder === null ? null : await readManifest(storage.at(folder));
    if (folder !== null && manifest !== null) runs.push({ id, folder, manifest });
  }
  return runs;
}

/**
 * The rows of one of the run's tables, from its file in a format whose values read back exactly
 * (Parquet) where the run has one, else from another.
 */
async function* tableRows(
  storage: Storage,
  run: OutputRun,
  table: TableName,
  /** The columns read (a Parquet file decodes no other). */
  columns: readonly string[],
): AsyncIterable<Record<string, unknown>> {
  const files = run.manifest.files
    .filter((file) => tableFormatOf(file.path)?.table === table)
    .sort((a, b) => Number(exactFile(b.path)) - Number(exactFile(a.path)));
  const file = files[0];
  if (!file) return;
  const of = tableFormatOf(file.path);
  if (!of) return;
  const runStorage = storage.at(run.folder);
  for await (const rows of of.format.read(runStorage, file.path, table, file.bytes, { columns }))
    yield* rows as Record<string, unknown>[];
}

export interface Held {
  /** Per run: the chosen responses it holds, and their studies. */
  runs: Map<string, Map<string, string>>;
  /** The chosen responses current/ holds, and their studies. */
  current: Map<string, string>;
}

/** Where the output holds each of `ids`. */
export async function whereHeld(
  storage: Storage,
  runs: readonly OutputRun[],
  ids: ReadonlySet<string>,
): Promise<Held> {
  const held: Held = { runs: new Map(), current: await currentHolders(storage, ids) };
  for (const run of runs) {
    const found = new Map<string, string>();
    for await (const row of tableRows(storage, run, 'responses', ['response_id'])) {
      const id = String(row.response_id);
      if (ids.has(id)) found.set(id, String(row.study_id));
    }
    if (found.size > 0) held.runs.set(run.id, found);
  }
  return held;
}

/** Response ids whose attribute matches one of `choices`, in any run or in current/. */
async function idsByAttribute(
  storage: Storage,
  runs: readonly OutputRun[],
  choices: readonly AttributeChoice[],
): Promise<Set<string>> {
  const matches = (row: Record<string, unknown>) =>
    choices.some((choice) => row.key === choice.key && row.value === choice.value);
  const ids = new Set<string>();
  for (const run of runs) {
    for await (const row of tableRows(storage, run, 'attributes', ['response_id', 'key', 'value']))
      if (matches(row)) ids.add(String(row.response_id));
  }
  const { readCurrentAttributes } = await import('./current-attributes.ts');
  for await (const row of readCurrentAttributes(storage)) if (matches(row)) ids.add(String(row.response_id));
  return ids;
}

/**
 * A run holding a chosen response and a file erase cannot read back is refused before anything
 * changes, naming the files: never a run half erased.
 */
export function refuseUnreadable(runs: readonly OutputRun[], held: Held): void {
  const blocked = runs
    .filter((run) => held.runs.has(run.id))
    .map((run) => ({ id: run.id, files: unreadableFiles(run.manifest) }))
    .filter((run) => run.files.length > 0);
  if (blocked.length === 0) return;
  const named = blocked.map((run) => `run ${run.id}: ${run.files.slice(0, 5).join(', ')}`).join('; ');
  throw new RunError(
    `erase cannot rewrite these files, which may hold the responses (${named}); nothing was erased`,
  );
}

/** The ids chosen; exit 2 (ConfigError) naming what the output does not hold. */
export async function chosenIds(
  storage: Storage,
  runs: readonly OutputRun[],
  choice: Choice,
  /** Ids an erasure finished just now took: not "unknown", only done. */
  finished: ReadonlySet<string>,
): Promise<{ ids: Set<string>; held: Held }> {
  if ('attributes' in choice) {
    const ids = await idsByAttribute(storage, runs, choice.attributes);
    if (ids.size === 0) {
      const asked = choice.attributes.map((a) => `${a.key}=${a.value}`).join(', ');
      throw new ConfigError(
        `--attribute ${asked}: no response of ${storage.location} has it; nothing was erased`,
      );
    }
    return { ids, held: await whereHeld(storage, runs, ids) };
  }
  const asked = new Set(choice.responses);
  const held = await whereHeld(storage, runs, asked);
  const found = new Set([
    ...held.current.keys(),
    ...[...held.runs.values()].flatMap((run) => [...run.keys()]),
  ]);
  const unknown = [...asked].filter((id) => !found.has(id) && !finished.has(id));
  if (unknown.length > 0) {
    throw new ConfigError(
      `--response ${unknown.join(', ')}: ${storage.location} holds no such response (in no run and not in current/); nothing was erased`,
    );
  }
  return { ids: new Set([...asked].filter((id) => found.has(id))), held };
}

function exactFile(path: string): boolean {
  return tableFormatOf(path)?.format.exact === true;
}
