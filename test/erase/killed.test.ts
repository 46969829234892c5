/**
 * `erase` killed (SIGKILL) at each of its steps, then run again with the same arguments: it
 * finishes what the kill stopped, every run verifies and the response is in no byte of the
 * output. Before the second erase, every run is whole (before or after) and found by the readers
 * and `verify`, even when the kill fell between the two renames of its switch (its folder is
 * then under its staged name).
 */
import { spawn } from 'node:child_process';
import { cp, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import { OutputReader } from '../../src/reader/index.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { repoRoot, runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { markResponses, progressOnly, type Traces, tracesOf, twoRuns } from '../helpers/erase.ts';
import { scanOutput } from '../helpers/output-scan.ts';

let sandbox: Sandbox;
let template: { dir: string; runs: string[]; traces: Traces; cleanup: () => Promise<void> };

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 11, studies: 3, responses: 5 });
  markResponses(sandbox);
  const { mkdtemp, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const dir = await mkdtemp(join(tmpdir(), 'study-export-erase-killed-'));
  const { runs } = await twoRuns(sandbox, dir);
  template = {
    dir,
    runs: runs.map((run) => run.split('/').at(-1) as string),
    traces: await tracesOf(runs[0] as string),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});
afterAll(async () => {
  await template?.cleanup();
  await sandbox.close();
});

function eraseKilledAt(output: string, id: string, point: string): Promise<NodeJS.Signals | null> {
  const child = spawn(process.execPath, ['bin/study-export.js', 'erase', output, '--response', id], {
    cwd: repoRoot,
    env: { ...process.env, CI: 'true', STUDY_EXPORT_KILL_AT: point },
    stdio: 'ignore',
  });
  return new Promise((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
}

const points = [
  'erase-planned',
  'erase-run-staged',
  'erase-run-aside',
  'erase-run-switched',
  'erase-run-done',
  'erase-current-part',
  'erase-current-done',
];

it.each(points)('killed at %s, erase again finishes it', async (point) => {
  await withTempDir(async (dir) => {
    await cp(template.dir, dir, { recursive: true });
    const output = join(dir, 'test');
    const { id, texts, checksums } = template.traces;
    expect(await eraseKilledAt(output, id, point)).toBe('SIGKILL');

    // Between the two renames of a switch the run's folder is away; readers find it staged.
    // Runs are erased two at once: at any point the other one may be between its renames too.
    const present = (await readdir(join(output, 'runs'))).filter((name) => !name.startsWith('.'));
    const missing = template.runs.filter((run) => !present.includes(run));
    if (point === 'erase-run-aside') expect(missing.length).toBeGreaterThanOrEqual(1);
    else expect(missing.length).toBeLessThanOrEqual(1);
    const reader = await OutputReader.open(output);
    expect((await reader.runs()).map((run) => run.id).sort()).toEqual([...template.runs].sort());
    for (const { runId } of await reader.latest()) expect(await reader.run(runId)).not.toBeNull();
    for (const run of template.runs) {
      const verified = await runCli(['verify', join(output, 'runs', run)]);
      expect(verified.stdout).toMatch(/: ok \(checked/);
      expect(verified.code).toBe(0);
    }

    const again = await runCli(['erase', output, '--response', id]);
    expect(progressOnly(again.stderr)).toEqual([]);
    expect(again.code).toBe(0);
    expect(await readdir(join(output, 'runs'))).toEqual([...template.runs].sort());
    for (const run of template.runs)
      expect((await verifyRun(join(output, 'runs', run))).problems).toEqual([]);
    expect(await scanOutput(output, [id, ...texts], checksums)).toEqual([]);
    expect((await readdir(join(output, 'erasures', '.pending'))).length).toBe(0);
  });
});
