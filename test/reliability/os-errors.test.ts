/**
 * Everyday environment failures through the command line, each said in plain words with
 * the path, never as "unexpected error ... report it": an output path that is a file, an
 * output folder the kernel refuses, bad --state paths, too many open files (a child shell's
 * `ulimit -n`), and a base_url that is not a URL. A read-only file system (EROFS) needs a
 * mount, which CI runners cannot make without root: its words are tested in
 * test/util/system-errors.test.ts.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { type CliResult, cleanEnv, repoRoot, runCli } from '../helpers/cli.ts';
import { KEY_ENV } from '../helpers/run.ts';

let sandbox: Sandbox;
let dir: string;
let pipeline: string;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 31, studies: 1, responses: 2 });
  dir = await mkdtemp(join(tmpdir(), 'study-export-oserr-'));
  pipeline = join(dir, 'p.yaml');
  await writeFile(
    pipeline,
    `name: t\nsource: { base_url: "${sandbox.base_url}", api_key_env: ${KEY_ENV}, retries: 1 }\nmedia: { enabled: false }\n`,
  );
});
afterAll(async () => {
  await sandbox.close();
  await rm(dir, { recursive: true, force: true });
});

const run = (args: string[]) =>
  runCli(['run', '--config', pipeline, ...args], { cwd: dir, env: { [KEY_ENV]: sandbox.api_key } });

/** One plain line on stderr, no "unexpected error", and the given exit code. */
function expectPlainError(result: CliResult, code: number): string {
  expect(result.code, result.stderr).toBe(code);
  expect(result.stderr).not.toMatch(/unexpected error|report it/);
  const errors = result.stderr.split('\n').filter((line) => line.startsWith('study-export:'));
  expect(errors, result.stderr).toHaveLength(1);
  return errors[0] as string;
}

describe.concurrent('environment errors are named, not reported as bugs', () => {
  it('an output path that is a file: exit 2 naming the output folder and the path', async () => {
    const file = join(dir, 'out-is-a-file');
    await writeFile(file, 'not a folder');
    const line = expectPlainError(await run(['--out', file]), 2);
    expect(line).toContain('output folder');
    expect(line).toContain(file);
    expect(line).toMatch(/is a file, not a folder|exists and is not a folder/);
  });

  it('an output folder the system refuses: exit 2, permission denied, with the path', async () => {
    // Root ignores file modes, but not /sys; anyone else is refused a read-only folder.
    let out = '/sys/study-export-test-out';
    if (process.getuid?.() !== 0) {
      const { chmod, mkdir } = await import('node:fs/promises');
      const locked = join(dir, 'locked');
      await mkdir(locked);
      await chmod(locked, 0o500);
      out = join(locked, 'out');
    }
    const line = expectPlainError(await run(['--out', out]), 2);
    expect(line).toMatch(/^study-export: output folder: .*permission denied/);
    expect(line).toContain(out.split('/').slice(0, 2).join('/'));
  });

  it.each([
    ['a folder', () => dir, /not a regular file/],
    ['a device (/dev/full)', () => '/dev/full', /not a regular file/],
    [
      'a path through a file',
      () => join(pipeline, 'state.json'),
      /a part of this path is a file, not a folder/,
    ],
  ])('--state naming %s: exit 2 naming the state file, nothing written', async (_what, path, says) => {
    const out = await mkdtemp(join(dir, 'state-out-'));
    const line = expectPlainError(await run(['--out', out, '--state', path()]), 2);
    expect(line).toContain(path());
    expect(line).toMatch(says);
    expect(await readdir(out)).toEqual([]);
  });

  it.each(['localhost:8080', 'ftp://example.com', 'htps//example.com'])(
    'validate refuses base_url "%s": exit 2 naming the key',
    async (url) => {
      const file = join(dir, `bad-url-${url.replace(/\W/g, '_')}.yaml`);
      await writeFile(file, `name: t\nsource: { base_url: "${url}", api_key_env: ${KEY_ENV} }\n`);
      const result = await runCli(['validate', '--config', file], {
        cwd: dir,
        env: { [KEY_ENV]: 'k-123456' },
      });
      const line = expectPlainError(result, 2);
      expect(line).toContain(
        `source.base_url: expected "sandbox" or an http:// or https:// URL, found "${url}"`,
      );
    },
  );

  it('too many open files (ulimit -n in the shell): exit 1, named with a way out, nothing committed', async () => {
    // Enough descriptors to start, not for 256 requests in flight against a slow service
    // beside the run's files.
    const slow = await startSandbox({ seed: 31, studies: 3, responses: 150, latencyMs: 300 });
    try {
      const file = join(dir, 'many.yaml');
      await writeFile(
        file,
        `name: t\nsource: { base_url: "${slow.base_url}", api_key_env: ${KEY_ENV}, retries: 1 }\nmedia: { enabled: false }\n`,
      );
      const out = await mkdtemp(join(dir, 'emfile-out-'));
      const result = await new Promise<CliResult>((resolve) => {
        execFile(
          'sh',
          ['-c', 'ulimit -n 180 && exec "$@"', 'sh', process.execPath, 'bin/study-export.js', 'run'].concat([
            '--config',
            file,
            '--out',
            out,
            '--concurrency',
            '256',
          ]),
          { cwd: repoRoot, env: cleanEnv({ [KEY_ENV]: slow.api_key }), timeout: 60_000 },
          (error, stdout, stderr) => {
            const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
            resolve({ code, stdout, stderr });
          },
        );
      });
      const line = expectPlainError(result, 1);
      expect(line).toMatch(
        /^study-export: too many open files \(at \/.+\): raise the limit \(ulimit -n\) or lower the concurrency$/,
      );
      // Nothing committed: no run, no latest, no state.
      const pipelineRoot = join(out, 't');
      const left = await readdir(pipelineRoot).catch(() => [] as string[]);
      expect(left.filter((name) => name !== 'runs')).toEqual([]);
      expect(await readdir(join(pipelineRoot, 'runs')).catch(() => [] as string[])).toEqual([]);
    } finally {
      await slow.close();
    }
  });
});
