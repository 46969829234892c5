/**
 * `study-export describe` after a run killed (SIGKILL) once it had published parts into
 * current/ but before its commit: those parts are no part of current/ yet, so the descriptor
 * leaves them out, and README.md and report.html count exactly the rows of the parts the
 * descriptor names (read back with DuckDB), not the killed run's.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { duckdb } from '../helpers/readers.ts';
import { isStopped, spawnRun } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 31, studies: 4, responses: 6 });
});
afterAll(async () => {
  await sandbox?.close();
});

interface Resource {
  name: string;
  format?: string;
  path: string | string[];
}

/** The killed run's responses parts in current/. */
async function partsOf(current: string, runId: string): Promise<string[]> {
  const entries = await readdir(join(current, 'responses'), { recursive: true });
  return entries.filter((path) => path.endsWith(`part-${runId}.parquet`));
}

/** Responses per study, in README.md's table of studies (| link_id | title | study_id | responses |). */
function readmeCounts(readme: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of readme.split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim().replace(/^`(.*)`$/, '$1'));
    const [, , , studyId, responses] = cells;
    if (cells.length === 6 && studyId && /^\d+$/.test(responses ?? ''))
      counts.set(studyId, Number(responses));
  }
  return counts;
}

describe('describe after a run killed before its commit', () => {
  it("counts in current/'s README.md and report.html only the parts its datapackage.json names", async () => {
    await withTempDir(async (dir) => {
      const out = join(dir, 'out');
      const root = join(out, 'test');
      const current = join(root, 'current');
      const first = await spawnRun(sandbox, dir, out);
      expect(await first.exited).toBe(null);
      const committed = (await readFile(join(root, 'latest'), 'utf8')).trim();

      // New responses in every study; the next run is stopped after each part it publishes,
      // and killed once a responses part of it is in current/.
      for (const study of sandbox.studies()) {
        for (let i = 0; i < 3; i++) sandbox.addResponse(study.link_id);
      }
      const { child, exited } = await spawnRun(sandbox, dir, out, {
        env: { STUDY_EXPORT_STOP_AT: 'current-part-published' },
      });
      let ended = false;
      void exited.then(() => {
        ended = true;
      });
      let killedRun: string | undefined;
      while (killedRun === undefined) {
        expect(ended, 'the run to stop after publishing a part').toBe(false);
        if (!(await isStopped(child.pid as number))) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          continue;
        }
        const runs = (await readdir(join(root, 'runs'))).filter((name) => name.startsWith('.tmp-'));
        const runId = runs[0]?.slice('.tmp-'.length);
        if (runId && (await partsOf(current, runId)).length > 0) killedRun = runId;
        else child.kill('SIGCONT');
      }
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
      expect((await readFile(join(root, 'latest'), 'utf8')).trim()).toBe(committed);

      const described = await runCli(['describe', root]);
      expect(described, described.stderr).toMatchObject({ code: 0 });

      const descriptor = JSON.parse(await readFile(join(current, 'datapackage.json'), 'utf8')) as {
        resources: Resource[];
      };
      const responses = descriptor.resources.find(
        (resource) => resource.name.startsWith('responses') && resource.format === 'parquet',
      );
      const paths = [responses?.path ?? []].flat();
      expect(paths.length).toBeGreaterThan(0);
      expect(paths.some((path) => path.includes(killedRun))).toBe(false);
      const files = paths.map((path) => `'${join(current, path)}'`).join(', ');
      const named = await duckdb((query) =>
        query(`SELECT study_id, count(*) AS n FROM read_parquet([${files}]) GROUP BY study_id`),
      );
      const rows = new Map(named.map((row) => [String(row.study_id), Number(row.n)]));
      // The killed run's parts hold the new responses: counting them would say more.
      const withKilled = await duckdb((query) =>
        query(
          `SELECT count(*) AS n FROM read_parquet('${join(current, 'responses', '*', `part-${killedRun}.parquet`)}')`,
        ),
      );
      const total = [...rows.values()].reduce((sum, n) => sum + n, 0);
      expect(Number(withKilled[0]?.n)).toBeGreaterThan(0);

      const readme = await readFile(join(current, 'README.md'), 'utf8');
      expect(readmeCounts(readme)).toEqual(rows);
      const report = await readFile(join(current, 'report.html'), 'utf8');
      expect(report).toContain(`<dt>Responses</dt><dd>${total} (`);
      for (const [, n] of rows) expect(report).toContain(`${n} responses created from`);
    });
  });
});
