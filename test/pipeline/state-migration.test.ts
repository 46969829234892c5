/**
 * The state lives beside the runs, one object per study (state/<permanent id>.json); a
 * state.json from before is migrated on first use with nothing lost; --state FILE keeps the
 * whole state in that one file.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPipelineState, readState } from '../../src/publish/state.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { apiRequestsSince, readManifest, runAgainst, sandboxConfig } from '../helpers/run.ts';

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 41, studies: 2, responses: 5 });
});
afterAll(async () => {
  await sandbox.close();
});

const oldWatermark = '2020-01-01T00:00:00.000Z';
/** A state.json as runs before wrote it: one study of the sandbox, one no longer exported. */
function legacyState(studyId: string, linkId: string) {
  return {
    version: 1,
    studies: {
      [studyId]: {
        link_id: linkId,
        watermark: oldWatermark,
        last_run: '20200101T000000Z',
        last_run_at: oldWatermark,
      },
      'study-not-exported-any-more': {
        link_id: 'retired',
        watermark: '2019-06-01T00:00:00.000Z',
        last_run: '20190601T000000Z',
        last_run_at: '2019-06-01T00:15:00.000Z',
      },
    },
  };
}

describe('state beside the runs', () => {
  it('migrates a state.json on first use: its watermarks are used, every study becomes an object, the file is kept renamed', async () => {
    await withTempDir(async (out) => {
      const study = sandbox.studies()[0]!;
      const root = join(out, 'test');
      await mkdir(root, { recursive: true });
      const legacy = `${JSON.stringify(legacyState(study.id, study.link_id), null, 2)}\n`;
      await writeFile(join(root, 'state.json'), legacy);

      const config = sandboxConfig(sandbox, out, { studies: { include: [study.link_id] } });
      const run = await runAgainst(sandbox, config);
      expect(run.status).toBe('complete');
      // The old file's watermark was the run's updated_since.
      expect((await readManifest(run.runDir!)).studies.map((s) => s.since)).toEqual([oldWatermark]);

      expect((await readdir(join(root, 'state'))).sort()).toEqual(
        [`${study.id}.json`, 'study-not-exported-any-more.json'].sort(),
      );
      const retired = JSON.parse(
        await readFile(join(root, 'state', 'study-not-exported-any-more.json'), 'utf8'),
      );
      expect(retired).toEqual({
        version: 1,
        study_id: 'study-not-exported-any-more',
        ...legacyState(study.id, study.link_id).studies['study-not-exported-any-more'],
      });
      const exported = JSON.parse(await readFile(join(root, 'state', `${study.id}.json`), 'utf8'));
      expect(exported.study_id).toBe(study.id);
      expect(exported.last_run).toBe(run.runDir!.split('/').pop());
      expect(Date.parse(exported.watermark)).toBeGreaterThan(Date.parse(oldWatermark));

      const files = await readdir(root);
      expect(files).not.toContain('state.json');
      expect(await readFile(join(root, 'state.json.migrated'), 'utf8')).toBe(legacy);

      // The next run reads the objects: the study's new watermark, and the retired study kept.
      const state = await readPipelineState(root);
      expect(Object.keys(state.studies).sort()).toEqual([study.id, 'study-not-exported-any-more'].sort());
      const from = sandbox.requests.length;
      const next = await runAgainst(sandbox, config);
      // Nothing changed since: no run is written, and the listing asked from the new watermark.
      expect(next.status).toBe('unchanged');
      const pages = apiRequestsSince(sandbox, from).filter((r) => r.path.includes('page='));
      expect(pages).toHaveLength(1);
      expect(pages[0]!.path).toContain(`updated_since=${encodeURIComponent(exported.watermark)}`);
    });
  });

  it('a failed first run does not migrate: state.json stays as it was', async () => {
    await withTempDir(async (out) => {
      const study = sandbox.studies()[0]!;
      const root = join(out, 'test');
      await mkdir(root, { recursive: true });
      const legacy = JSON.stringify(legacyState(study.id, study.link_id));
      await writeFile(join(root, 'state.json'), legacy);
      const broken = sandboxConfig(sandbox, out, { source: { api_key_env: 'NO_SUCH_KEY_VARIABLE' } });
      await expect(runAgainst(sandbox, broken, { env: {} })).rejects.toThrow();
      expect(await readFile(join(root, 'state.json'), 'utf8')).toBe(legacy);
      expect(await readdir(root)).toEqual(['state.json']);
    });
  });

  it('--state FILE keeps the whole state in that one file, and nothing beside the runs', async () => {
    await withTempDir(async (out) => {
      const stateFile = join(out, 'elsewhere', 'state.json');
      const run = await runAgainst(sandbox, sandboxConfig(sandbox, out), { stateFile });
      const state = await readState(stateFile);
      expect(Object.keys(state.studies).sort()).toEqual(
        sandbox
          .studies()
          .map((s) => s.id)
          .sort(),
      );
      for (const entry of Object.values(state.studies))
        expect(entry.last_run).toBe(run.runDir!.split('/').pop());
      expect(await readdir(join(out, 'test'))).not.toContain('state');
    });
  });
});
