/**
 * What the erase tests share: an output of two runs that both hold every response (CSV,
 * Parquet, workbooks, media), the traces of one response to look for (its id, the answers only
 * it gave, its recordings' checksums), and every table's rows of the other responses, read with
 * hyparquet, to compare before and after.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { tableNames } from '../../src/tables/index.ts';
import { readHyparquet } from './readers.ts';
import { runAgainst, sandboxConfig } from './run.ts';

export const ERASE_FORMATS = ['csv', 'parquet', 'xlsx'];

/**
 * Gives every response of the sandbox words of its own (the generated answers repeat across
 * responses): its answers and its first answered transcript turn end in a phrase naming it.
 */
export function markResponses(sandbox: Sandbox): void {
  for (const study of sandbox.studies()) {
    for (const response of sandbox.responses(study.link_id)) {
      const phrase = ownWords(response.id);
      sandbox.mutateListItem(study.link_id, response.id, (item) => {
        const answers = item.answers as Record<string, string> | undefined;
        for (const key of Object.keys(answers ?? {}))
          if (answers && key !== 'Summary') answers[key] = `${answers[key]} ${phrase} answered`;
        return item;
      });
      sandbox.mutateDetail(study.link_id, response.id, (detail) => {
        const turns = detail.transcript as { user?: string; answer_id?: string | null }[];
        const turn = turns.find((row) => row.answer_id);
        if (turn) turn.user = `${turn.user ?? ''} ${phrase} said`;
        return detail;
      });
    }
  }
}

/** The words markResponses gives a response. */
export function ownWords(id: string): string {
  return `only-${id.slice(0, 8)}-words`;
}

/** Two committed runs (the second --full), so each response is in both and in current/. */
export async function twoRuns(sandbox: Sandbox, out: string, overrides: Record<string, unknown> = {}) {
  const config = sandboxConfig(sandbox, out, {
    output: { dir: out, formats: ERASE_FORMATS },
    media: { enabled: true },
    ...overrides,
  });
  const first = await runAgainst(sandbox, config);
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const second = await runAgainst(sandbox, config, { full: true });
  return { config, runs: [first.runDir as string, second.runDir as string] };
}

export interface Traces {
  id: string;
  /** Answers, summary and transcript text of the response found in no other response. */
  texts: string[];
  /** SHA-256 of its archived recordings. */
  checksums: string[];
}

/** A response with recordings, and the traces it leaves, read from a run's Parquet tables. */
export async function tracesOf(runDir: string, pick = 0): Promise<Traces> {
  const media = await readHyparquet(join(runDir, 'media.parquet'));
  const withMedia = [
    ...new Set(media.filter((row) => row.status === 'archived').map((row) => String(row.response_id))),
  ];
  const id = withMedia[pick] as string;
  const answers = await readHyparquet(join(runDir, 'answers.parquet'));
  const transcript = await readHyparquet(join(runDir, 'transcript.parquet'));
  const phrase = ownWords(id);
  // Every text of it that carries its own words (markResponses), whole.
  const own = [
    ...answers.filter((row) => row.response_id === id).map((row) => String(row.answer ?? '')),
    ...transcript.filter((row) => row.response_id === id).map((row) => String(row.user ?? '')),
  ].filter((text) => text.includes(phrase));
  const checksums = media
    .filter((row) => row.response_id === id && row.status === 'archived')
    .map((row) => String(row.sha256));
  return { id, texts: [phrase, ...new Set(own)], checksums };
}

/** Every table of a run (Parquet) without the rows of `id`, sorted, as JSON text per row. */
export async function rowsWithout(runDir: string, id: string): Promise<Record<string, string[]>> {
  const tables: Record<string, string[]> = {};
  for (const table of tableNames) {
    const rows = await readHyparquet(join(runDir, `${table}.parquet`));
    tables[table] = rows
      .filter((row) => row.response_id !== id)
      .map((row) => JSON.stringify(row, (_k, v) => (typeof v === 'bigint' ? String(v) : v)))
      .sort();
  }
  return tables;
}

/** current/'s rows of every table (each bucket's newest Parquet part) without `id`, as JSON text. */
export async function currentRowsWithout(output: string, id: string): Promise<Record<string, string[]>> {
  const tables: Record<string, string[]> = {};
  for (const table of tableNames) {
    const rows: string[] = [];
    for (const bucket of await readdir(join(output, 'current', table))) {
      const parts = (await readdir(join(output, 'current', table, bucket))).filter((name) =>
        name.endsWith('.parquet'),
      );
      const newest = parts.sort().at(-1);
      if (!newest) continue;
      for (const row of await readHyparquet(join(output, 'current', table, bucket, newest)))
        if (row.response_id !== id)
          rows.push(JSON.stringify(row, (_k, v) => (typeof v === 'bigint' ? String(v) : v)));
    }
    tables[table] = rows.sort();
  }
  return tables;
}

export async function readJson<T>(path: string): Promise<T> {
  return JSON.parse(await readFile(path, 'utf8')) as T;
}

/** The lines `erase` writes on stderr, none but its progress (a run rewritten, current/). */
export function progressOnly(stderr: string): string[] {
  const lines = stderr.split('\n').filter((line) => line !== '');
  return lines.filter(
    (line) => !/^(\[\d+\/\d+\] run \S+:|current\/: \d+ stud(y|ies)) rewritten without them$/.test(line),
  );
}
