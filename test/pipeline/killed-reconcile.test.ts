/**
 * A reconcile killed (SIGKILL) during its commit leaves current/ before or after: killed
 * before `latest` names its run, the next run undoes its parts (the deleted response is still
 * there, as before); killed once it is committed, the next run completes it (the response is
 * gone, as after), neither of them reconciling again.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { currentKeys, currentTables, freshExport } from '../helpers/current.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readHyparquet } from '../helpers/readers.ts';
import { readManifest, runAgainst, sandboxConfig, spawnRun } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeEach(async () => {
  sandbox = await startSandbox({ seed: 9, studies: 3, responses: 30 });
});
afterEach(async () => {
  await sandbox.close();
});

describe('a reconcile killed during its commit', () => {
  it.each([
    ['current-part-published', 'before'],
    ['run-committed', 'after'],
  ] as const)('killed at %s leaves current/ %s', async (killAt, state) => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { output: { formats: ['parquet'] } });
      await runAgainst(sandbox, config);
      const current = join(out, 'test', 'current');
      const before = await currentTables(current);
      const [study] = sandbox.studies();
      const gone = sandbox.responses(study!.link_id)[5]!.id;
      sandbox.deleteResponse(study!.link_id, gone);

      const { exited } = await spawnRun(sandbox, out, out, {
        media: '{ enabled: false }',
        args: ['--formats', 'parquet', '--reconcile'],
        env: { STUDY_EXPORT_KILL_AT: killAt },
      });
      expect(await exited).toBe('SIGKILL');

      // The next run, scheduled (its studies were reconciled by the first run's full export,
      // so none is due), finishes or undoes what the killed one left.
      const next = await runAgainst(sandbox, config);
      const keys = await currentKeys(current);
      expect(Object.values(keys.repeated).every((n) => n === 0)).toBe(true);
      if (state === 'before') {
        expect(next.status).toBe('unchanged');
        expect(await currentTables(current)).toEqual(before);
        expect(keys.responseIds).toContain(gone);
      } else {
        expect(keys.responseIds).not.toContain(gone);
        expect(await currentTables(current)).toEqual(await freshExport(sandbox));
        // The killed run is committed, with its deletions.
        const latest = (await readFile(join(out, 'test', 'latest'), 'utf8')).trim();
        const runDir = join(out, 'test', 'runs', latest);
        expect((await readHyparquet(join(runDir, 'deletions.parquet'))).map((r) => r.response_id)).toEqual([
          gone,
        ]);
        expect((await readManifest(runDir)).reconcile?.studies.some((s) => s.outcome === 'removed')).toBe(
          true,
        );
      }
    });
  });
});
