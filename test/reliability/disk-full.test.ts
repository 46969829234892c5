/**
 * A disk that is full, for real: a small tmpfs, mounted in a private mount namespace of the
 * child (`unshare`, as root or as a user with user namespaces), so nothing on the machine is
 * touched. $TMPDIR full before anything is committed: exit 1, nothing committed, the message
 * names the scratch folder as the temporary directory. The output's disk filling after the
 * commit (the run stopped there, the disk filled, the run let go on): exit 3, "run <id>
 * committed, but …" naming the output's disk; the run verifies, `latest` names it, and the
 * next run, with nothing new, completes it: every response once in current/.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import { readPipelineState } from '../../src/publish/state.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { cleanEnv, repoRoot } from '../helpers/cli.ts';
import { currentKeys } from '../helpers/current.ts';
import { KEY_ENV } from '../helpers/run.ts';

let sandbox: Sandbox;
let dir: string;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 23, studies: 2, responses: 40 });
  dir = await mkdtemp(join(tmpdir(), 'study-export-diskfull-'));
});
afterAll(async () => {
  await sandbox.close();
  await rm(dir, { recursive: true, force: true });
});

const cli = `"${process.execPath}" "${join(repoRoot, 'bin', 'study-export.js')}"`;

/**
 * `script` in sh, in a mount namespace of its own (and a user namespace when not root) where
 * `mount -t tmpfs` is allowed; resolves with its exit code and what it wrote.
 */
function inNamespace(
  script: string,
  env: NodeJS.ProcessEnv,
): { child: ChildProcess; done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const child = spawn('unshare', ['--map-root-user', '--mount', 'sh', '-c', script], {
    cwd: repoRoot,
    env: cleanEnv({ [KEY_ENV]: sandbox.api_key, TSX_DISABLE_CACHE: '1', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done };
}

async function pipelineFile(name: string, out: string): Promise<string> {
  const file = join(dir, `${name}.yaml`);
  await writeFile(
    file,
    [
      'name: test',
      `source: { base_url: "${sandbox.base_url}", api_key_env: ${KEY_ENV}, retries: 1 }`,
      `output: { dir: "${out}", formats: [csv, parquet] }`,
      'media: { enabled: false }',
    ].join('\n'),
  );
  return file;
}

const studyExportLines = (stderr: string) =>
  stderr.split('\n').filter((line) => line.startsWith('study-export:'));

describe('a full disk', () => {
  it.each([
    ['a first run', ''],
    ['a --full run after a first run (its rows staged in scratch)', '--full'],
  ])(
    '$TMPDIR full in %s: exit 1, nothing committed, the scratch folder named as the temporary directory',
    async (_what, args) => {
      const name = args === '' ? 'first' : 'full';
      const scratch = join(dir, `tmp-full-${name}`);
      const out = join(dir, `out-tmp-full-${name}`);
      await mkdir(scratch);
      const pipeline = await pipelineFile(`tmp-full-${name}`, out);
      const { done } = inNamespace(
        [
          ...(args === '' ? [] : [`${cli} run --config "${pipeline}" > /dev/null 2>&1 || exit 91`]),
          `mount -t tmpfs -o size=1m tmpfs "${scratch}" || exit 90`,
          `head -c 4M /dev/zero > "${scratch}/filler" 2>/dev/null`,
          `TMPDIR="${scratch}" exec ${cli} run --config "${pipeline}" ${args}`,
        ].join('\n'),
        {},
      );
      const result = await done;
      expect(result.code, result.stderr).toBe(1);
      const lines = studyExportLines(result.stderr);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(
          `^study-export: the temporary directory is full: no space left on the device holding the run's scratch folder ${scratch}/study-export-\\d+-\\w{6} \\(in \\$TMPDIR, ${scratch}\\); nothing was committed`,
        ),
      );
      // Nothing committed: no new run, latest and the state as the first run left them (or none).
      const pipelineDir = join(out, 'test');
      const runs = (await readdir(join(pipelineDir, 'runs')).catch(() => [] as string[])).filter(
        (run) => !run.startsWith('.'),
      );
      if (args === '') {
        expect((await readdir(pipelineDir).catch(() => [] as string[])).filter((n) => n !== 'runs')).toEqual(
          [],
        );
        expect(runs).toEqual([]);
      } else {
        expect(runs).toHaveLength(1);
        expect((await readFile(join(pipelineDir, 'latest'), 'utf8')).trim()).toBe(runs[0]);
        for (const entry of Object.values((await readPipelineState(pipelineDir)).studies)) {
          expect(entry.last_run).toBe(runs[0]);
        }
        expect(await readdir(join(pipelineDir, '.pending')).catch(() => [])).toEqual([]);
      }
    },
  );

  it('$TMPDIR full when a recording too large for memory is received: exit 1, not a failed recording in a partial run', async () => {
    const large = await startSandbox({ seed: 23, studies: 3, responses: 1, mediaScale: 9000 });
    try {
      const scratch = join(dir, 'tmp-full-media');
      const out = join(dir, 'out-tmp-full-media');
      await mkdir(scratch);
      const file = join(dir, 'tmp-full-media.yaml');
      await writeFile(
        file,
        [
          'name: test',
          `source: { base_url: "${large.base_url}", api_key_env: ${KEY_ENV}, retries: 1 }`,
          `output: { dir: "${out}", formats: [parquet] }`,
          'media: { enabled: true, video: mp4 }',
        ].join('\n'),
      );
      // Room for the run's small files, not for a 10 MB recording (more than memory takes, 8 MiB).
      const { done } = inNamespace(
        [
          `mount -t tmpfs -o size=4m tmpfs "${scratch}" || exit 90`,
          `TMPDIR="${scratch}" exec ${cli} run --config "${file}"`,
        ].join('\n'),
        { [KEY_ENV]: large.api_key },
      );
      const result = await done;
      expect(result.code, result.stderr).toBe(1);
      expect(studyExportLines(result.stderr)).toEqual([
        expect.stringMatching(
          /^study-export: the temporary directory is full: no space left on the device holding the run's scratch folder .*; nothing was committed/,
        ),
      ]);
      expect(await readdir(join(out, 'test', 'runs')).catch(() => [] as string[])).toEqual([]);
      expect(await readdir(join(out, 'test')).catch(() => [] as string[])).not.toContain('latest');
    } finally {
      await large.close();
    }
  });

  it('the output disk filling after the commit: exit 3, "committed, but" naming it; the next run completes it', async () => {
    const out = join(dir, 'out-after');
    const copy = join(dir, 'out-after-copy');
    await mkdir(out);
    const pipeline = await pipelineFile('after', out);
    const report = join(dir, 'after');
    await mkdir(report);
    const [study] = sandbox.studies();
    // First run; the full run of one study stops once committed and the parts its new ones
    // replace are removed (which frees room), while the test fills the disk, and goes on;
    // then the disk gets room again, the next run (nothing new) completes it, and the output
    // is copied out of the namespace for the checks.
    const { child, done } = inNamespace(
      [
        `mount -t tmpfs -o size=8m tmpfs "${out}" || exit 90`,
        `${cli} run --config "${pipeline}" > /dev/null 2>&1 || exit 91`,
        `STUDY_EXPORT_STOP_AT=current-replaced-removed ${cli} run --config "${pipeline}" --full --study ${study!.link_id} 2> "${report}/full.err" > /dev/null`,
        `echo $? > "${report}/full.code"`,
        `rm -f "${out}/filler"`,
        `${cli} run --config "${pipeline}" > "${report}/next.out" 2> "${report}/next.err"`,
        `echo $? > "${report}/next.code"`,
        `cp -a "${out}" "${copy}"`,
      ].join('\n'),
      {},
    );
    sandbox.deleteResponse(study!.link_id, sandbox.responses(study!.link_id)[0]!.id);
    // The full run, stopped: fill its output disk through the namespace's view of it.
    const stopped = await stoppedChildOf(child.pid!);
    const filler = await open(`/proc/${stopped}/root${out}/filler`, 'w');
    const block = Buffer.alloc(64 * 1024);
    try {
      for (;;) await filler.write(block);
    } catch (error) {
      expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
    } finally {
      await filler.close();
    }
    process.kill(stopped, 'SIGCONT');
    const result = await done;
    expect(result.code, result.stderr).toBe(0);

    const fullCode = Number((await readFile(join(report, 'full.code'), 'utf8')).trim());
    const fullErr = await readFile(join(report, 'full.err'), 'utf8');
    expect(fullCode, fullErr).toBe(3);
    const pipelineDir = join(copy, 'test');
    const runId = (await readFile(join(pipelineDir, 'latest'), 'utf8')).trim();
    const lines = studyExportLines(fullErr);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      expect(line).toMatch(
        new RegExp(
          `^study-export: run ${runId} committed, but (updating current/|writing the state) failed on ${out}/test/(current|state): the disk is full: no space left on the device holding ${out}/test/\\S+; the next run completes it$`,
        ),
      );
    }
    // Never a scratch path (the temporary directory is on another disk).
    expect(fullErr).not.toMatch(/study-export-\d+-\w{6}/);
    // latest names the full run, whose files are all there.
    expect((await verifyRun(join(pipelineDir, 'runs', runId))).problems).toEqual([]);
    // The next run found nothing new and completed it: state, every response once.
    expect(Number((await readFile(join(report, 'next.code'), 'utf8')).trim())).toBe(0);
    expect(await readFile(join(report, 'next.out'), 'utf8')).toMatch(
      new RegExp(`^nothing new since run ${runId} `),
    );
    expect((await readPipelineState(pipelineDir)).studies[study!.id]?.last_run).toBe(runId);
    expect(await readdir(join(pipelineDir, '.pending'))).toEqual([]);
    const { responseIds, repeated } = await currentKeys(join(pipelineDir, 'current'));
    const expected = sandbox.studies().flatMap((s) => sandbox.responses(s.link_id).map((r) => r.id));
    expect(responseIds).toEqual([...expected].sort());
    expect(Object.values(repeated).every((n) => n === 0)).toBe(true);
  });
});

/** The pid of a process under `parent` that a STOP point has stopped (state T). */
async function stoppedChildOf(parent: number): Promise<number> {
  for (let waited = 0; waited < 60_000; waited += 50) {
    const children = await readFile(`/proc/${parent}/task/${parent}/children`, 'utf8').catch(() => '');
    for (const pid of children.trim().split(/\s+/).filter(Boolean).map(Number)) {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
      if (/^\d+ \(.*\) T /.test(stat)) return pid;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('no stopped run within a minute');
}
