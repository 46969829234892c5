/**
 * Errors a user meets first, through the command line: a wrong key, an unknown study, an
 * unreachable host, broken pipeline files. Each exits 2 (1 for the unreachable host: an
 * outage, not a mistake to fix) with one clear message naming what to fix (the variable,
 * the study, the URL, the file and key), prints no key, and leaves
 * no run, no `latest` and no state behind. The cases are independent subprocesses, run at once.
 */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { type CliResult, runCli } from '../helpers/cli.ts';
import { KEY_ENV } from '../helpers/run.ts';
import { expectNoSecretInText } from '../helpers/run-files.ts';

let sandbox: Sandbox;
let dir: string;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 71, studies: 2, responses: 2 });
  dir = await mkdtemp(join(tmpdir(), 'study-export-errors-'));
});
afterAll(async () => {
  await sandbox.close();
  await rm(dir, { recursive: true, force: true });
});

/** Writes a pipeline file and runs `run --config` on it with the given environment. */
async function runPipelineFile(
  name: string,
  lines: string[],
  env: NodeJS.ProcessEnv,
  args: string[] = [],
): Promise<CliResult & { file: string; out: string }> {
  const file = join(dir, `${name}.yaml`);
  const out = join(dir, `out-${name}`);
  await writeFile(file, [...lines, `output: { dir: "${out}" }`, ''].join('\n'));
  const result = await runCli(['run', '--config', file, ...args], { cwd: dir, env });
  return { ...result, file, out };
}

/** No file at all under `out` (a failed run may leave empty folders, never a run or state). */
async function expectNothingWritten(out: string): Promise<void> {
  // Not even an empty folder: the study list is read before anything is created.
  const entries = await readdir(out, { recursive: true }).catch(() => []);
  expect(entries).toEqual([]);
}

function expectOneError(result: CliResult, code = 2): string {
  expect(result.code, result.stderr).toBe(code);
  const errors = result.stderr.split('\n').filter((line) => line.startsWith('study-export:'));
  expect(errors, result.stderr).toHaveLength(1);
  return result.stderr;
}

const source = (extra = '') =>
  `source: { base_url: "${sandbox.base_url}", api_key_env: ${KEY_ENV}, retries: 1${extra} }`;

describe.concurrent('the command line refuses clearly', () => {
  it('a wrong key: exit 2 naming the variable; neither key is printed', async () => {
    const wrong = 'wrong-key-4f1d2b9c8e7a6d5c';
    const result = await runPipelineFile('wrong-key', ['name: t', source()], { [KEY_ENV]: wrong });
    const stderr = expectOneError(result);
    expect(stderr).toContain(KEY_ENV);
    expect(stderr).toMatch(/not accepted|refused/);
    for (const secret of [wrong, sandbox.api_key]) expectNoSecretInText(result.stdout + stderr, secret);
    await expectNothingWritten(result.out);
  });

  it('an unknown study: exit 2 naming it', async () => {
    const result = await runPipelineFile(
      'unknown-study',
      ['name: t', source()],
      { [KEY_ENV]: sandbox.api_key },
      ['--study', 'nope'],
    );
    const stderr = expectOneError(result);
    expect(stderr).toMatch(/--study "?nope"?:? (matches no study|no visible study)/);
    expect(stderr).toContain('study-export studies');
    expectNoSecretInText(result.stdout + stderr, sandbox.api_key);
    await expectNothingWritten(result.out);
  });

  it('an unreachable host: exit 1 (an outage, not a configuration error) naming the URL', async () => {
    const result = await runPipelineFile(
      'unreachable',
      ['name: t', `source: { base_url: "http://127.0.0.1:9", api_key_env: ${KEY_ENV}, retries: 1 }`],
      { [KEY_ENV]: sandbox.api_key },
    );
    const stderr = expectOneError(result, 1);
    expect(stderr).toContain('http://127.0.0.1:9');
    expect(stderr).toContain('the service is unreachable');
    expectNoSecretInText(result.stdout + stderr, sandbox.api_key);
    await expectNothingWritten(result.out);
  });

  const badFiles: { name: string; lines: () => string[]; env?: NodeJS.ProcessEnv; says: RegExp[] }[] = [
    {
      name: 'unknown-key',
      lines: () => ['name: t', source(', per_pgae: 10')],
      says: [/source/, /unknown key "per_pgae"/],
    },
    {
      name: 'wrong-type',
      lines: () => ['name: t', source(', concurrency: "eight"')],
      says: [/source\.concurrency/, /expected an integer from 1 to 256/, /"eight"/],
    },
    {
      name: 'missing-env-in-file',
      lines: () => [
        'name: t',
        `source: { base_url: "\${RELIABILITY_NO_SUCH_URL}", api_key_env: ${KEY_ENV} }`,
      ],
      says: [/source\.base_url/, /RELIABILITY_NO_SUCH_URL is not set/],
    },
    {
      name: 'missing-key-env',
      lines: () => ['name: t', source()],
      env: {},
      says: [new RegExp(`environment variable ${KEY_ENV} is not set`), /api_key_env/],
    },
  ];
  for (const bad of badFiles) {
    it(`a bad pipeline file (${bad.name}): exit 2 naming the file and the key`, async () => {
      const result = await runPipelineFile(bad.name, bad.lines(), bad.env ?? { [KEY_ENV]: sandbox.api_key });
      const stderr = expectOneError(result);
      expect(stderr).toContain(`${bad.name}.yaml`);
      for (const pattern of bad.says) expect(stderr).toMatch(pattern);
      expectNoSecretInText(result.stdout + stderr, sandbox.api_key);
      await expectNothingWritten(result.out);
    });
  }
});
