/**
 * `study-export erase` of an output in a bucket (s3rver on loopback): the same guarantees as on
 * a folder, checked on a download of the whole prefix afterwards, and `verify` of each run
 * where it lies.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import {
  currentRowsWithout,
  ERASE_FORMATS,
  markResponses,
  progressOnly,
  rowsWithout,
  tracesOf,
  twoRuns,
} from '../helpers/erase.ts';
import { scanOutput } from '../helpers/output-scan.ts';
import { downloadObjects, S3_CREDENTIALS, type S3Server, startSandboxAndS3 } from '../helpers/s3.ts';

let sandbox: Sandbox;
let s3: S3Server;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ sandbox, s3, stop } = await startSandboxAndS3({ seed: 11, studies: 3, responses: 5 }));
  markResponses(sandbox);
});
afterAll(() => stop?.());

it('erases a response from every object of every run and from current/ in a bucket', async () => {
  await withTempDir(async (dir) => {
    const { runs } = await twoRuns(sandbox, 's3://exports/team', {
      output: { dir: 's3://exports/team', formats: ERASE_FORMATS, s3: { endpoint: s3.endpoint } },
    });
    const output = 's3://exports/team/test';
    const before = join(dir, 'before');
    await downloadObjects(s3, 'exports', 'team/test/', before);
    const runIds = runs.map((run) => run.split('/').at(-1) as string);
    const local = (root: string) => runIds.map((id) => join(root, 'runs', id));
    const traces = await tracesOf(local(before)[0] as string);
    const others = await Promise.all(local(before).map((run) => rowsWithout(run, traces.id)));
    const otherCurrent = await currentRowsWithout(before, traces.id);

    const erased = await runCli(['erase', output, '--endpoint', s3.endpoint, '--response', traces.id], {
      env: S3_CREDENTIALS,
    });
    expect(progressOnly(erased.stderr)).toEqual([]);
    expect(erased.code).toBe(0);

    const after = join(dir, 'after');
    await downloadObjects(s3, 'exports', 'team/test/', after);
    expect(await scanOutput(after, [traces.id, ...traces.texts], traces.checksums)).toEqual([]);
    for (const run of runs) expect((await verifyRun(run, { endpoint: s3.endpoint })).problems).toEqual([]);
    expect(await Promise.all(local(after).map((run) => rowsWithout(run, traces.id)))).toEqual(others);
    expect(await currentRowsWithout(after, traces.id)).toEqual(otherCurrent);
    expect(
      (await s3.keys('exports', 'team/test/erasures/')).filter((key) => key.endsWith('.json')),
    ).toHaveLength(1);
  });
});
