/**
 * `archive` of an output in a bucket (s3rver on loopback), into a local folder as a tar and
 * into the bucket as a zip: the same checks by sha256sum, sha512sum, tar, unzip and DuckDB, and
 * `verify` of the zip where it lies.
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveOutput, verifyBag } from '../../src/archive/index.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { checksumTools, duckdbCounts, recordingList } from '../helpers/bag.ts';
import { withTempDir } from '../helpers/environment.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';
import { type S3Server, startSandboxAndS3 } from '../helpers/s3.ts';

const run = promisify(execFile);

let sandbox: Sandbox;
let s3: S3Server;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ sandbox, s3, stop } = await startSandboxAndS3({ seed: 21, studies: 3, responses: 2 }));
});
afterAll(() => stop?.());

describe('study-export archive of an output in a bucket', () => {
  it('bags each study from s3:// into a folder as tar and into the bucket as zip', async () => {
    await withTempDir(async (dir) => {
      const config = sandboxConfig(sandbox, 's3://exports/team', {
        output: { s3: { endpoint: s3.endpoint } },
        media: { enabled: true },
      });
      await runAgainst(sandbox, config);
      const settings = { endpoint: s3.endpoint };
      const output = 's3://exports/team/test';
      const tarred = await archiveOutput({
        output,
        s3: settings,
        studies: [],
        to: dir,
        form: 'tar',
        info: {},
      });
      expect(tarred.status).toBe('complete');
      expect(tarred.bags.length).toBe(sandbox.studies().length);
      const withRecordings = tarred.bags.find((bag) => bag.recordings > 0)!;
      expect(withRecordings).toBeDefined();
      const untarred = join(dir, 'untarred');
      await mkdir(untarred);
      await run('tar', ['-xf', withRecordings.location, '-C', untarred]);
      const bag = join(untarred, withRecordings.link_id);
      expect(await checksumTools(bag)).toBe(withRecordings.files);
      expect((await duckdbCounts(bag)).studies).toBe(1);
      expect((await recordingList(bag)).every((row) => row.in_bag === 'yes')).toBe(true);

      const zipped = await archiveOutput({
        output,
        s3: settings,
        studies: [withRecordings.study_id],
        to: 's3://exports/bags',
        form: 'zip',
        info: {},
      });
      const location = zipped.bags[0]!.location;
      expect(location).toBe(`s3://exports/bags/${withRecordings.link_id}.zip`);
      const check = await verifyBag(location, settings);
      expect(check.problems).toEqual([]);
      const local = join(dir, 'bag.zip');
      await writeFile(local, await s3.get('exports', `bags/${withRecordings.link_id}.zip`));
      await run('unzip', ['-tq', local]);
    });
  });
});
