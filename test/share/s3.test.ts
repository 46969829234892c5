/**
 * `share` of an output in a bucket (s3rver on loopback) into the bucket, as folders and as
 * zips: the objects downloaded by a plain SDK client and read back by the Frictionless library
 * (every CSV cast, every hash checked), DuckDB (against current/ as it reads it) and unzip -t;
 * an existing package is refused there too; only the ledger (handoffs/) is added to the output.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nameOf } from '../../src/names.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { shareOutput } from '../../src/share/index.ts';
import { tableNames } from '../../src/tables/index.ts';
import { currentTables } from '../helpers/current.ts';
import { withTempDir } from '../helpers/environment.ts';
import { validateDataPackage } from '../helpers/frictionless.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';
import { downloadObjects, type S3Server, startSandboxAndS3 } from '../helpers/s3.ts';
import { unzipTest } from '../helpers/zip.ts';

let sandbox: Sandbox;
let s3: S3Server;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ sandbox, s3, stop } = await startSandboxAndS3({ seed: 46, studies: 2, responses: 3 }));
});
afterAll(() => stop?.());

describe('study-export share of an output in a bucket', () => {
  it('writes each package into the bucket as a folder and as a zip, refusing one that exists', async () => {
    await withTempDir(async (dir) => {
      const config = sandboxConfig(sandbox, 's3://exports/team', {
        output: { s3: { endpoint: s3.endpoint } },
      });
      await runAgainst(sandbox, config);
      const settings = { endpoint: s3.endpoint };
      const output = 's3://exports/team/test';
      const rawBefore = await s3.keys('exports', 'team/');
      const rawBytes = await Promise.all(rawBefore.map((key) => s3.get('exports', key)));

      const shared = await shareOutput({
        output,
        s3: settings,
        studies: [],
        to: 's3://exports/handoff',
        form: 'folder',
      });
      expect(shared.length).toBeGreaterThan(0);
      await downloadObjects(s3, 'exports', 'team/test/current/', join(dir, 'current'));
      const current = await currentTables(join(dir, 'current'));
      for (const study of shared) {
        const name = nameOf(study.link_id);
        expect(study.location).toBe(`s3://exports/handoff/${name}`);
        const pkg = join(dir, 'folders', name);
        await downloadObjects(s3, 'exports', `handoff/${name}/`, pkg);
        const report = await validateDataPackage(pkg);
        expect(report.errors).toEqual([]);
        const rows = await currentTables(pkg, 'run');
        for (const table of tableNames)
          expect(rows[table], table).toEqual(
            current[table].filter((text) => JSON.parse(text).study_id === study.study_id),
          );
        expect(rows.responses.length).toBe(study.responses);
      }

      const again = shareOutput({
        output,
        s3: settings,
        studies: [],
        to: 's3://exports/handoff',
        form: 'folder',
      });
      await expect(again).rejects.toThrow(/s3:\/\/exports\/handoff\/.*: exist.*never written over/);

      const [first] = shared as [(typeof shared)[number]];
      const zipped = await shareOutput({
        output,
        s3: settings,
        studies: [first.link_id],
        to: 's3://exports/zips',
        form: 'zip',
      });
      const name = nameOf(first.link_id);
      expect(zipped.map((z) => z.location)).toEqual([`s3://exports/zips/${name}.zip`]);
      expect(await s3.keys('exports', 'zips/')).toEqual([`zips/${name}.zip`]);
      const local = join(dir, `${name}.zip`);
      await writeFile(local, await s3.get('exports', `zips/${name}.zip`));
      expect(unzipTest(local)).toMatch(/No errors detected/);
      await expect(
        shareOutput({
          output,
          s3: settings,
          studies: [first.study_id],
          to: 's3://exports/zips',
          form: 'zip',
        }),
      ).rejects.toThrow(`s3://exports/zips/${name}.zip: exists`);

      // The output's objects, byte for byte as before; beside them, a ledger record per package.
      const after = await s3.keys('exports', 'team/');
      expect(after.filter((key) => !key.startsWith('team/test/handoffs/'))).toEqual(rawBefore);
      expect(after.filter((key) => key.startsWith('team/test/handoffs/'))).toHaveLength(shared.length + 1);
      const rawAfter = await Promise.all(rawBefore.map((key) => s3.get('exports', key)));
      expect(rawAfter.every((bytes, i) => bytes.equals(rawBytes[i] as Buffer))).toBe(true);
    });
  }, 120_000);
});
