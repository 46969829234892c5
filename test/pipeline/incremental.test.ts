/**
 * Incremental runs: the watermark per permanent study id, what a rerun asks for, renames,
 * and a state that never moves past data that was not written.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WATERMARK_LAG_MS } from '../../src/pipeline/watermark.ts';
import { readPipelineState } from '../../src/publish/state.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readHyparquet } from '../helpers/readers.ts';
import { apiRequestsSince, readManifest, runAgainst, sandboxConfig } from '../helpers/run.ts';
import { sandboxResponseIds } from '../helpers/run-files.ts';
import { isDetailPath } from '../helpers/sandbox.ts';

let sandbox: Sandbox;

beforeEach(async () => {
  sandbox = await startSandbox({ seed: 21, studies: 3, responses: 6 });
});
afterEach(async () => {
  await sandbox.close();
});

const pipelineDir = (out: string) => join(out, 'test');

describe('incremental runs', () => {
  it('rerun with no changes: one list call plus one page call per study, nothing downloaded', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { media: { enabled: true } });
      const first = await runAgainst(sandbox, config);
      expect(first.status).toBe('complete');
      const before = sandbox.requests.length;
      const second = await runAgainst(sandbox, config);
      // Nothing new: no run is written (test/pipeline/nothing-new.test.ts), and it says what it cost.
      expect(second.status).toBe('unchanged');
      const requests = sandbox.requests.slice(before);
      expect(requests.filter((r) => r.listener !== 'api')).toEqual([]);
      expect(requests).toHaveLength(1 + sandbox.studies().length);
      expect(second.unchanged?.requests).toBe(1 + sandbox.studies().length);
      expect(requests.filter((r) => isDetailPath(r.path))).toEqual([]);
    });
  });

  it('exports exactly the responses updated or added since the last run', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { media: { enabled: true } });
      await runAgainst(sandbox, config);
      const [study] = sandbox.studies();
      const touched = sandbox.responses(study!.link_id)[2]!.id;
      sandbox.touchResponse(study!.link_id, touched, new Date(Date.now() + 1000));
      const added = sandbox.addResponse(study!.link_id);
      const second = await runAgainst(sandbox, config);
      const ids = (await readHyparquet(join(second.runDir!, 'responses.parquet'))).map((r) => r.response_id);
      expect(ids.sort()).toEqual([touched, added].sort());
      const media = await readHyparquet(join(second.runDir!, 'media.parquet'));
      expect(new Set(media.map((m) => m.response_id)).size).toBeLessThanOrEqual(2);
      for (const row of media) expect([touched, added]).toContain(row.response_id);
    });
  });

  it('records a watermark of the run start minus the lag, per permanent id', async () => {
    await withTempDir(async (out) => {
      const startedAt = Date.now();
      const result = await runAgainst(sandbox, sandboxConfig(sandbox, out));
      const state = await readPipelineState(pipelineDir(out));
      const manifest = await readManifest(result.runDir!);
      expect(Object.keys(state.studies).sort()).toEqual(
        sandbox
          .studies()
          .map((s) => s.id)
          .sort(),
      );
      for (const entry of Object.values(state.studies)) {
        expect(entry.last_run).toBe(manifest.run_id);
        const watermark = Date.parse(entry.watermark!);
        expect(watermark).toBeGreaterThanOrEqual(startedAt - WATERMARK_LAG_MS - 1000);
        expect(watermark).toBeLessThanOrEqual(Date.now() - WATERMARK_LAG_MS);
      }
    });
  });

  it('follows a study by its permanent id after its link_id is renamed', async () => {
    await withTempDir(async (out) => {
      const [study] = sandbox.studies();
      const config = sandboxConfig(sandbox, out, { studies: { include: [study!.id] } });
      await runAgainst(sandbox, config);
      sandbox.renameStudy(study!.link_id, 'renamed-study');
      const added = sandbox.addResponse('renamed-study');
      const second = await runAgainst(sandbox, config);
      const manifest = await readManifest(second.runDir!);
      expect(manifest.warnings.map((w) => w.code)).toContain('study_renamed');
      expect(manifest.studies).toMatchObject([{ study_id: study!.id, link_id: 'renamed-study' }]);
      const ids = (await readHyparquet(join(second.runDir!, 'responses.parquet'))).map((r) => r.response_id);
      expect(ids).toEqual([added]);
      const state = await readPipelineState(pipelineDir(out));
      expect(state.studies[study!.id]?.link_id).toBe('renamed-study');
    });
  });

  it('keeps the watermark of a study with a rejected record, and the next run fetches it again', async () => {
    await withTempDir(async (out) => {
      const [broken, intact] = sandbox.studies();
      const victim = sandbox.responses(broken!.link_id)[0]!.id;
      sandbox.mutateDetail(broken!.link_id, victim, (detail) => ({ ...detail, transcript: 'not an array' }));
      const config = sandboxConfig(sandbox, out);
      const first = await runAgainst(sandbox, config);
      expect(first.status).toBe('partial');
      expect(first.rejects).toBe(1);
      const rejects = (await readFile(join(first.runDir!, 'rejects.jsonl'), 'utf8')).trim().split('\n');
      expect(rejects).toHaveLength(1);
      expect(JSON.parse(rejects[0]!)).toMatchObject({
        response_id: victim,
        raw: { transcript: 'not an array' },
      });
      expect(JSON.parse(rejects[0]!).reason).toContain('transcript');

      const state = await readPipelineState(pipelineDir(out));
      expect(state.studies[broken!.id]).toBeUndefined();
      expect(state.studies[intact!.id]?.watermark).toBeTruthy();

      sandbox.mutateDetail(broken!.link_id, victim, (detail) => detail);
      const before = sandbox.requests.length;
      const second = await runAgainst(sandbox, config);
      expect(second.status).toBe('complete');
      const ids = (await readHyparquet(join(second.runDir!, 'responses.parquet'))).map((r) => r.response_id);
      expect(ids).toHaveLength(sandbox.responses(broken!.link_id).length);
      expect(ids).toContain(victim);
      // The intact studies were asked only for changes: one empty page each.
      const pages = apiRequestsSince(sandbox, before).filter(
        (r) => !r.path.includes(encodeURIComponent(broken!.link_id)),
      );
      expect(pages.filter((r) => r.path.startsWith('/api/public/responses/'))).toHaveLength(
        sandbox.studies().length - 1,
      );
    });
  });

  it('--full ignores the watermark and --since overrides it', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out);
      await runAgainst(sandbox, config);
      const total = sandboxResponseIds(sandbox).length;
      const full = await runAgainst(sandbox, config, { full: true });
      expect(full.tables.find((t) => t.table === 'responses')?.rows).toBe(total);

      const since = '2000-01-01T00:00:00Z';
      const before = sandbox.requests.length;
      await runAgainst(sandbox, config, { since });
      const pageRequests = apiRequestsSince(sandbox, before).filter((r) => r.path.includes('page='));
      for (const request of pageRequests)
        expect(request.path).toContain('updated_since=2000-01-01T00%3A00%3A00.000Z');
    });
  });
});
