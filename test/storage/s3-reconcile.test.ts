/**
 * A reconcile on s3:// (s3rver on loopback): the response the sandbox deleted leaves current/
 * in the bucket, read back from a download by DuckDB, and the run's deletions table holds it.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { currentKeys, currentTables, freshExport } from '../helpers/current.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readHyparquet } from '../helpers/readers.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';
import { downloadObjects, type S3Server, startSandboxAndS3 } from '../helpers/s3.ts';

let sandbox: Sandbox;
let s3: S3Server;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ sandbox, s3, stop } = await startSandboxAndS3({ seed: 23, studies: 3, responses: 8 }));
});
afterAll(() => stop?.());

it('takes a response the service deleted out of current/ in the bucket, and records it', async () => {
  await withTempDir(async (dir) => {
    const config = sandboxConfig(sandbox, 's3://exports/reconcile', {
      output: { s3: { endpoint: s3.endpoint }, formats: ['csv', 'parquet'] },
    });
    await runAgainst(sandbox, config);
    const [study] = sandbox.studies();
    const gone = sandbox.responses(study!.link_id)[2]!.id;
    sandbox.deleteResponse(study!.link_id, gone);

    const result = await runAgainst(sandbox, config, { reconcile: true });
    expect(result.status).toBe('complete');
    expect(result.reconciled).toEqual({ studies: sandbox.studies().length, removed: 1, heldBack: 0 });
    await downloadObjects(s3, 'exports', 'reconcile/test/', dir);
    const keys = await currentKeys(join(dir, 'current'));
    expect(keys.responseIds).not.toContain(gone);
    expect(Object.values(keys.repeated).every((n) => n === 0)).toBe(true);
    expect(await currentTables(join(dir, 'current'))).toEqual(await freshExport(sandbox));
    const runId = result.runDir!.split('/').pop()!;
    const deletions = await readHyparquet(join(dir, 'runs', runId, 'deletions.parquet'));
    expect(deletions.map((row) => [row.response_id, row.study_id, row.run_id])).toEqual([
      [gone, study!.id, runId],
    ]);
  });
});
