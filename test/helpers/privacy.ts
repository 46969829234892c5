/**
 * What the privacy tests share: an output exported from the sandbox by a pipeline file with a
 * privacy: section, and the personal data its raw output holds, found by plain string and
 * regular-expression searches of the run's CSV tables (none of src/privacy), so that a scan of
 * each package (output-scan.ts) can look for every one of them.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Papa from 'papaparse';
import { expect } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { people, personalTerms } from '../../src/sandbox/personal.ts';
import { runCli } from './cli.ts';

export const run = promisify(execFile);
export const SECRET_ENV = 'TEST_PSEUDONYM_KEY';
export const API_KEY_ENV = 'TEST_STUDY_API_KEY';

export function csvRows(text: string): Record<string, string>[] {
  return Papa.parse<Record<string, string>>(text.replace(/^\ufeff/, ''), {
    header: true,
    skipEmptyLines: true,
  }).data;
}

/** A pipeline file for the sandbox with a privacy: section, and its terms file beside it. */
export async function privacyPipeline(dir: string, sandbox: Sandbox, privacy: string[]): Promise<void> {
  const text = [
    'name: priv',
    'source:',
    `  base_url: ${sandbox.base_url}`,
    `  api_key_env: ${API_KEY_ENV}`,
    '  retries: 0',
    'output:',
    '  formats: [csv, parquet, xlsx, sav, dta]',
    '  csv: { escape_formulae: false }',
    'media:',
    '  enabled: true',
    'privacy:',
    `  key_env: ${SECRET_ENV}`,
    ...privacy.map((line) => `  ${line}`),
    '',
  ].join('\n');
  await writeFile(join(dir, 'pipeline.yaml'), text);
  await writeFile(join(dir, 'terms.txt'), `${personalTerms.join('\n')}\n`);
}

/** study-export in `dir` with the sandbox's key and `secret` as the pseudonym secret. */
export function cli(dir: string, sandbox: Sandbox, args: string[], secret: string | null = 'first secret') {
  return runCli(args, {
    cwd: dir,
    env: { [API_KEY_ENV]: sandbox.api_key, ...(secret === null ? {} : { [SECRET_ENV]: secret }) },
  });
}

export interface Planted {
  responseIds: string[];
  /** Values of the id, email and name URL parameters. */
  attributeValues: string[];
  /** Emails, phones, URLs, IPs, names, employers and streets the respondents said. */
  said: string[];
}

/** The personal data a run's tables hold, each found there at least once. */
export async function plantedIn(runDir: string): Promise<Planted> {
  const read = async (table: string) => csvRows(await readFile(join(runDir, `${table}.csv`), 'utf8'));
  const responses = await read('responses');
  const attributes = await read('attributes');
  const texts = [
    ...responses.flatMap((r) => [r.summary ?? '', r.short_transcript ?? '']),
    ...(await read('answers')).map((a) => a.answer ?? ''),
    ...(await read('transcript')).flatMap((t) => [t.user ?? '', t.moderator ?? '']),
  ].join('\n');
  const candidates = [
    ...people.flatMap((p) => [p.email, p.phone, p.url, p.name, p.employer, p.street]),
    ...personalTerms,
  ];
  const said = [...new Set(candidates.filter((c) => texts.includes(c)))];
  const ips = [...new Set(texts.match(/192\.0\.2\.\d+|2001:db8::[0-9a-f]+/g) ?? [])];
  const attributeValues = attributes
    .filter((a) => ['id', 'email', 'name'].includes(a.key ?? ''))
    .map((a) => a.value ?? '');
  // The sandbox plants every kind: the test would prove nothing of a kind it never planted.
  for (const kind of ['email', 'phone', 'url'] as const)
    expect(
      people.some((p) => said.includes(p[kind])),
      kind,
    ).toBe(true);
  expect(people.some((p) => said.includes(p.name))).toBe(true);
  expect(ips.length).toBeGreaterThan(0);
  expect(attributes.some((a) => a.key === 'email')).toBe(true);
  return { responseIds: responses.map((r) => r.response_id ?? ''), attributeValues, said: [...said, ...ips] };
}

/** The only run of an output. */
export async function onlyRun(output: string): Promise<string> {
  const runs = (await readdir(join(output, 'runs'))).filter((id) => !id.startsWith('.'));
  expect(runs).toHaveLength(1);
  return join(output, 'runs', runs[0] as string);
}

/** A file of a zipped bag or project, as text. */
export async function unzipText(zip: string, entry: string): Promise<string> {
  const { stdout } = await run('unzip', ['-p', zip, entry], { maxBuffer: 1 << 26 });
  return stdout;
}
