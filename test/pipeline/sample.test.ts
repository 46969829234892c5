/**
 * `run --limit N`: a sample run of at most N responses per study, the first each study lists,
 * in runs/<id>-sample, saying so in its manifest, README.md and report.html; the state,
 * current/ and `latest` stay byte for byte as they were, so the next run starts where it
 * would have without the sample.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readHyparquet } from '../helpers/readers.ts';
import {
  apiRequestsSince,
  detailRequests,
  readManifest,
  runAgainst,
  sandboxConfig,
  snapshot,
} from '../helpers/run.ts';

let sandbox: Sandbox;
beforeEach(async () => {
  sandbox = await startSandbox({ seed: 41, studies: 3, responses: 6 });
});
afterEach(async () => {
  await sandbox.close();
});

const runIdOf = (runDir: string | null) => runDir!.split(/[/\\]/).pop()!;
const note = 'sample: at most 2 responses of each study (run --limit 2), not the whole export';

describe('run --limit', () => {
  it('exports the first N listed responses of each study and moves nothing else', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, {
        media: { enabled: true },
        output: { formats: ['csv', 'parquet', 'xlsx'] },
      });
      const root = join(out, 'test');
      const first = await runAgainst(sandbox, config);
      expect(first.status).toBe('complete');
      // Something new on the service, which the sample must not use up.
      const [study] = sandbox.studies();
      const added = sandbox.addResponse(study!.link_id);
      // The runs folder gains the sample, and the pipeline's folder its lease's lock for a while;
      // every other file and folder, the first run's included, stays as it was.
      const outside = async () =>
        Object.fromEntries(
          Object.entries(await snapshot(root)).filter(
            ([path]) => path !== '.' && path !== 'runs' && !/^runs[/\\][^/\\]*-sample/.test(path),
          ),
        );
      const before = await outside();

      const from = sandbox.requests.length;
      const sample = await runAgainst(sandbox, config, { limit: 2 });
      expect(sample.status).toBe('complete');
      expect(sample.sample).toEqual({ limit: 2 });
      expect(await outside()).toEqual(before);
      expect((await readFile(join(root, 'latest'), 'utf8')).trim()).toBe(runIdOf(first.runDir));
      const sampleId = runIdOf(sample.runDir);
      expect(sampleId).toMatch(/^\d{8}T\d{6}Z-sample$/);
      expect((await readdir(join(root, 'runs'))).sort()).toEqual([runIdOf(first.runDir), sampleId].sort());

      // The first two each study lists, asked for in pages of two, and their details only.
      const studies = sandbox.studies();
      const expected = studies.flatMap((s) =>
        sandbox
          .responses(s.link_id)
          .slice(0, 2)
          .map((r) => r.id),
      );
      const rows = await readHyparquet(join(sample.runDir!, 'responses.parquet'));
      expect(rows.map((row) => row.response_id).sort()).toEqual([...expected].sort());
      expect(detailRequests(sandbox, from)).toBe(expected.length);
      const listings = apiRequestsSince(sandbox, from).filter((r) => /\/responses\/[^/?]+\?/.test(r.path));
      expect(listings).toHaveLength(studies.length);
      for (const listing of listings) {
        expect(listing.path).toContain('per_page=2');
        // From the beginning, whatever the watermark says.
        expect(listing.path).not.toContain('updated_since');
      }

      const manifest = await readManifest(sample.runDir!);
      expect(manifest.sample).toEqual({ limit: 2 });
      expect(manifest.tables.responses).toBe(expected.length);
      expect(await readFile(join(sample.runDir!, 'README.md'), 'utf8')).toContain(`- Export: ${note}`);
      expect(await readFile(join(sample.runDir!, 'report.html'), 'utf8')).toContain(
        `<dt>Export</dt><dd>${note}`,
      );
      expect((await verifyRun(sample.runDir!)).problems).toEqual([]);

      // The next run finds the new response, as it would have without the sample.
      const next = await runAgainst(sandbox, config);
      expect(next.status).toBe('complete');
      const exported = await readHyparquet(join(next.runDir!, 'responses.parquet'));
      expect(exported.map((row) => row.response_id)).toEqual([added]);
    });
  });

  it('as the first contact with a service: no latest, state or current/ until a run without it', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out);
      const root = join(out, 'test');
      const sample = await runAgainst(sandbox, config, { limit: 1 });
      expect(sample.status).toBe('complete');
      // Only the service the output belongs to is recorded, and the sample itself.
      expect((await readdir(root)).sort()).toEqual(['runs', 'source.json']);
      expect(await readdir(join(root, 'runs'))).toEqual([runIdOf(sample.runDir)]);
      expect((await readManifest(sample.runDir!)).tables.responses).toBe(sandbox.studies().length);

      const full = await runAgainst(sandbox, config);
      expect(full.status).toBe('complete');
      expect((await readManifest(full.runDir!)).tables.responses).toBe(sandbox.studies().length * 6);
      expect((await readFile(join(root, 'latest'), 'utf8')).trim()).toBe(runIdOf(full.runDir));
    });
  });
});
