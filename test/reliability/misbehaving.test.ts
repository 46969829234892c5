/**
 * A service that misbehaves at the HTTP level, through the command line: one record whose
 * connection is always reset, a body that never ends, a body trickled one byte at a time,
 * and a service that goes away mid-run. Each run ends (never hangs), with the exit code and
 * message the README promises, a bounded peak memory in the child, everything else
 * committed, the lost study's watermark held, and nothing left in the temporary directory.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPipelineState } from '../../src/publish/state.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { cleanEnv, repoRoot } from '../helpers/cli.ts';
import { KEY_ENV, readManifest } from '../helpers/run.ts';
import { readRejects, responseIdsOf, sandboxResponseIds } from '../helpers/run-files.ts';
import { isDetailPath } from '../helpers/sandbox.ts';
import { type Misbehaviour, startMisbehavingServer } from './misbehaving-server.ts';

let sandbox: Sandbox;
let dir: string;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 16, studies: 3, responses: 4 });
  dir = await mkdtemp(join(tmpdir(), 'study-export-misbehaving-'));
});
afterAll(async () => {
  await sandbox.close();
  await rm(dir, { recursive: true, force: true });
});

interface MeasuredRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The child's peak resident set (VmHWM), read while it runs. */
  peakRssMiB: number;
  out: string;
  /** The child's TMPDIR: nothing may be left in it. */
  tmp: string;
}

/** `run` on a pipeline file in a child process with its own TMPDIR, watching its peak memory. */
async function runMeasured(name: string, source: string, args: string[] = []): Promise<MeasuredRun> {
  const out = join(dir, `out-${name}`);
  const tmp = await mkdtemp(join(dir, `tmp-${name}-`));
  const file = join(dir, `${name}.yaml`);
  await writeFile(
    file,
    [
      'name: t',
      `source: { api_key_env: ${KEY_ENV}, ${source} }`,
      `output: { dir: "${out}" }`,
      'media: { enabled: false }',
      '',
    ].join('\n'),
  );
  const child = spawn(
    process.execPath,
    [join(repoRoot, 'bin', 'study-export.js'), 'run', '--config', file, ...args],
    {
      cwd: dir,
      env: cleanEnv({ [KEY_ENV]: sandbox.api_key, TMPDIR: tmp }),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  let peakKiB = 0;
  const poll = setInterval(() => {
    readFile(`/proc/${child.pid}/status`, 'utf8')
      .then((status) => {
        const kib = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
        peakKiB = Math.max(peakKiB, kib);
      })
      .catch(() => {});
  }, 20);
  const code = await new Promise<number | null>((resolve) =>
    child.on('exit', (exitCode) => resolve(exitCode)),
  );
  clearInterval(poll);
  return { code, stdout, stderr, peakRssMiB: peakKiB / 1024, out, tmp };
}

async function runDirOf(run: MeasuredRun): Promise<string> {
  const runs = join(run.out, 't', 'runs');
  const [id] = await readdir(runs);
  return join(runs, id!);
}

async function expectTempDirEmpty(run: MeasuredRun): Promise<void> {
  // tsx keeps its compile cache there (tsx-<uid>): not the product's.
  const left = (await readdir(run.tmp)).filter((name) => !name.startsWith('tsx-'));
  expect(left, 'left in the temporary directory').toEqual([]);
}

/** The first response of the first study, and the path of its detail call. */
function victim() {
  const study = sandbox.studies()[0]!;
  const response = sandbox.responses(study.link_id)[0]!;
  const path = `/api/public/responses/${encodeURIComponent(study.link_id)}/${encodeURIComponent(response.id)}`;
  return { study, response, path };
}

/**
 * A lost record: exit 3, its reject naming why and where, every response still in the
 * responses table (from its listing), its study's watermark held and every other study's moved.
 */
async function expectOneRecordLost(run: MeasuredRun, reason: RegExp): Promise<void> {
  const { study, response } = victim();
  expect(run.code, run.stderr).toBe(3);
  const runDir = await runDirOf(run);
  const rejects = await readRejects(runDir);
  expect(rejects.map((r) => r.response_id)).toEqual([response.id]);
  expect(rejects[0]!.reason).toMatch(reason);
  expect(rejects[0]!.reason).toContain(`/api/public/responses/${study.link_id}/${response.id}`);
  const manifest = await readManifest(runDir);
  expect(manifest.status).toBe('partial');
  const visible = manifest.studies.map((s) => s.link_id);
  expect(visible.length).toBeGreaterThan(1);
  expect((await responseIdsOf(runDir)).sort()).toEqual(sandboxResponseIds(sandbox, visible).sort());
  const state = await readPipelineState(join(run.out, 't'));
  expect(state.studies[study.id]?.watermark ?? null, "the lost study's watermark moved").toBeNull();
  for (const other of manifest.studies.filter((s) => s.study_id !== study.id)) {
    expect(state.studies[other.study_id]?.watermark, `study ${other.link_id} was not committed`).toEqual(
      expect.any(String),
    );
  }
  await expectTempDirEmpty(run);
}

describe.concurrent('a misbehaving service', () => {
  it('one record whose connection is always reset: a reject of its study (exit 3), everything else committed', async () => {
    const { path } = victim();
    const server = await startMisbehavingServer(
      sandbox.base_url,
      (p): Misbehaviour => (p.startsWith(path) ? 'reset' : 'pass'),
    );
    try {
      const run = await runMeasured('reset', `base_url: "${server.url}", retries: 2`);
      expect(server.counts.reset).toBe(3);
      await expectOneRecordLost(run, /unreachable.*ECONNRESET|ECONNRESET.*unreachable/);
    } finally {
      await server.close();
    }
  });

  it("one study's listing always reset: that study fails (exit 3, watermark held), the others are committed", async () => {
    const { study } = victim();
    const listing = `/api/public/responses/${encodeURIComponent(study.link_id)}?`;
    const server = await startMisbehavingServer(
      sandbox.base_url,
      (p): Misbehaviour => (p.startsWith(listing) ? 'reset' : 'pass'),
    );
    try {
      const run = await runMeasured('listing', `base_url: "${server.url}", retries: 1`);
      expect(run.code, run.stderr).toBe(3);
      expect(run.stderr).toContain(`list_responses for study "${study.link_id}": the service is unreachable`);
      const runDir = await runDirOf(run);
      const manifest = await readManifest(runDir);
      const failed = manifest.studies.find((s) => s.study_id === study.id)!;
      expect(failed.lossless).toBe(false);
      expect(failed.error).toMatch(/the service is unreachable: ECONNRESET/);
      const others = manifest.studies.filter((s) => s.study_id !== study.id).map((s) => s.link_id);
      expect(others.length).toBeGreaterThan(0);
      expect((await responseIdsOf(runDir)).sort()).toEqual(sandboxResponseIds(sandbox, others).sort());
      const state = await readPipelineState(join(run.out, 't'));
      expect(state.studies[study.id]?.watermark ?? null).toBeNull();
      for (const other of manifest.studies.filter((s) => s.study_id !== study.id)) {
        expect(state.studies[other.study_id]?.watermark).toEqual(expect.any(String));
      }
      await expectTempDirEmpty(run);
    } finally {
      await server.close();
    }
  });

  it('an endless body: cut off at source.max_body_mib while it arrives, the run ends with a reject, memory bounded', async () => {
    const { path } = victim();
    const server = await startMisbehavingServer(
      sandbox.base_url,
      (p): Misbehaviour => (p.startsWith(path) ? 'endless' : 'pass'),
    );
    try {
      const run = await runMeasured('endless', `base_url: "${server.url}", retries: 2, max_body_mib: 4`);
      // Too large is final: the same answer would come again.
      expect(server.counts.endless).toBe(1);
      await expectOneRecordLost(run, /larger than source\.max_body_mib \(4 MiB\)/);
      // A run of this size needs far less; an uncapped endless body grows without bound.
      expect(run.peakRssMiB).toBeGreaterThan(0);
      expect(run.peakRssMiB).toBeLessThan(300);
    } finally {
      await server.close();
    }
  });

  it('a body trickled one byte at a time: the request deadline ends it, the run does not hang', async () => {
    const { path } = victim();
    const server = await startMisbehavingServer(
      sandbox.base_url,
      (p): Misbehaviour => (p.startsWith(path) ? 'trickle' : 'pass'),
      { trickleMs: 100 },
    );
    try {
      // The idle timeout alone (timeout_ms) never fires: a byte comes every 100 ms.
      const run = await runMeasured(
        'trickle',
        `base_url: "${server.url}", retries: 1, timeout_ms: 1000, deadline_ms: 1500`,
      );
      expect(server.counts.trickle).toBe(2);
      await expectOneRecordLost(run, /too slow: no complete answer within 1500 ms \(source\.deadline_ms\)/);
    } finally {
      await server.close();
    }
  });

  it('the service goes away mid-run: exit 3, what was fetched is committed, no watermark moves', async () => {
    let details = 0;
    const server = await startMisbehavingServer(sandbox.base_url, (p): Misbehaviour => {
      if (isDetailPath(p)) details += 1;
      return details > 3 ? 'gone' : 'pass';
    });
    try {
      const run = await runMeasured('gone', `base_url: "${server.url}", retries: 2, concurrency: 1`);
      expect(run.code, run.stderr).toBe(3);
      const runDir = await runDirOf(run);
      const manifest = await readManifest(runDir);
      expect(manifest.status).toBe('partial');
      // What was lost is named, and named as an outage: rejects, or a study whose listing failed.
      const rejects = await readRejects(runDir);
      const failed = manifest.studies.filter((s) => s.error !== null);
      expect(rejects.length + failed.length).toBeGreaterThan(0);
      for (const text of [...rejects.map((r) => r.reason), ...failed.map((s) => s.error ?? '')]) {
        expect(text).toMatch(/the service is unreachable/);
      }
      // The three details fetched before it went away are committed, with their transcripts.
      const transcript = await readFile(join(runDir, 'transcript.csv'), 'utf8');
      const withTranscript = (await responseIdsOf(runDir)).filter((id) => transcript.includes(id));
      expect(withTranscript).toHaveLength(3);
      expect(manifest.studies.every((s) => s.lossless)).toBe(false);
      const state = await readPipelineState(join(run.out, 't'));
      for (const study of manifest.studies) {
        if (!study.lossless) expect(state.studies[study.study_id]?.watermark ?? null).toBeNull();
      }
      await expectTempDirEmpty(run);
    } finally {
      await server.close();
    }
  });

  it('a service unreachable for the whole run: exit 1, saying so, and nothing written', async () => {
    const server = await startMisbehavingServer(sandbox.base_url, (): Misbehaviour => 'gone');
    try {
      const run = await runMeasured('unreachable', `base_url: "${server.url}", retries: 1`);
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).toMatch(/list_surveys: the service is unreachable/);
      expect(run.stderr).not.toMatch(/configuration|usage/);
      expect(await readdir(run.out).catch(() => [])).toEqual([]);
      await expectTempDirEmpty(run);
    } finally {
      await server.close();
    }
  });
});
