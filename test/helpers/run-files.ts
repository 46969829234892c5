/**
 * What every reliability case asserts after a whole run: nothing lost, nothing duplicated,
 * rejects recorded with a reason, and the key nowhere (files, logs, media requests).
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { expect } from 'vitest';
import type { Reject } from '../../src/records.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { runCli } from './cli.ts';
import { readCsv, readHyparquet } from './readers.ts';
import { KEY_ENV } from './run.ts';

/** Every response id the sandbox serves to the primary key, over all visible studies. */
export function sandboxResponseIds(sandbox: Sandbox, linkIds?: string[]): string[] {
  const studies = sandbox.studies().filter((s) => linkIds === undefined || linkIds.includes(s.link_id));
  return studies.flatMap((s) => sandbox.responses(s.link_id).map((r) => r.id));
}

export async function responseIdsOf(runDir: string): Promise<string[]> {
  const rows = await readHyparquet(join(runDir, 'responses.parquet'));
  return rows.map((r) => r.response_id as string);
}

export async function readRejects(runDir: string): Promise<Reject[]> {
  const text = await readFile(join(runDir, 'rejects.jsonl'), 'utf8');
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Reject);
}

/**
 * Every expected id is in responses exactly once, or (when a list item itself was rejected)
 * named by a reject; nothing else is in responses.
 */
export async function expectEveryResponseOnce(runDir: string, expected: string[]): Promise<void> {
  const ids = await responseIdsOf(runDir);
  expect(new Set(ids).size, 'duplicate response_id in responses').toBe(ids.length);
  const listRejected = new Set(
    (await readRejects(runDir))
      .filter((r) => r.operation === 'list_responses' && r.response_id !== undefined)
      .map((r) => r.response_id as string),
  );
  const inRun = new Set(ids);
  for (const id of expected) {
    expect(inRun.has(id) || listRejected.has(id), `response ${id} is neither exported nor rejected`).toBe(
      true,
    );
  }
  const wanted = new Set(expected);
  expect(ids.filter((id) => !wanted.has(id))).toEqual([]);
}

/** Every file under dir, gzip files decompressed, as text (binary files as latin1). */
async function* filesUnder(dir: string): AsyncGenerator<{ path: string; text: string }> {
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const bytes = await readFile(path);
    const body = path.endsWith('.gz') ? gunzipSync(bytes) : bytes;
    yield { path, text: body.toString('latin1') };
  }
}

/** The key (and its UTF-8 bytes read as latin1) appears in no file under dir. */
export async function expectNoSecretIn(dir: string, secret: string): Promise<number> {
  let files = 0;
  for await (const file of filesUnder(dir)) {
    files += 1;
    expect(file.text.includes(secret), `the key is in ${file.path}`).toBe(false);
  }
  return files;
}

export function expectNoSecretInText(text: string, secret: string): void {
  expect(text.includes(secret), 'the key was printed').toBe(false);
}

/** A table's CSV data rows as sorted lines (header first), to compare two runs. */
export async function sortedCsvRows(runDir: string, table: string): Promise<string[]> {
  const { records } = await readCsv(join(runDir, `${table}.csv`));
  const [header, ...rows] = records;
  return [JSON.stringify(header), ...rows.map((r) => JSON.stringify(r)).sort()];
}

/**
 * A pipeline file in `dir` for `service` (CSV and Parquet unless `formats` says, no media, any
 * further `source` settings), and `study-export run` of it as a child process (extra arguments
 * to `run`, extra environment such as TZ in `env`) with the run folder it printed.
 */
export async function cliPipeline(
  service: Pick<Sandbox, 'base_url' | 'api_key'>,
  dir: string,
  name: string,
  options: { env?: Record<string, string>; formats?: string[]; source?: Record<string, number> } = {},
) {
  const out = join(dir, 'out');
  const pipelineFile = join(dir, 'pipeline.yaml');
  const source = Object.entries(options.source ?? {}).map(([key, value]) => `, ${key}: ${value}`);
  await writeFile(
    pipelineFile,
    [
      `name: ${name}`,
      `source: { base_url: "${service.base_url}", api_key_env: ${KEY_ENV}${source.join('')} }`,
      `output: { dir: "${out}", formats: [${(options.formats ?? ['csv', 'parquet']).join(', ')}] }`,
      'media: { enabled: false }',
      '',
    ].join('\n'),
  );
  const run = async (...args: string[]) => {
    const cli = await runCli(['run', '--config', pipelineFile, ...args], {
      cwd: dir,
      env: { [KEY_ENV]: service.api_key, ...options.env },
    });
    const runDir = /^run: (.+)$/m.exec(cli.stdout)?.[1] ?? '';
    return { ...cli, runDir: runDir.startsWith('/') ? runDir : join(dir, runDir) };
  };
  return { out, run };
}
