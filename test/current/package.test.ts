/**
 * current/'s descriptor when a table has no file: a shard that owns none of the service's
 * studies still writes a package the Frictionless reference library accepts, every table
 * described (its rows inline, none), and `describe` after it, with the other shard's parts.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentFormats } from '../../src/current/index.ts';
import { resourceName } from '../../src/output/datapackage.ts';
import { describeCurrent } from '../../src/publish/describe.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { inShard } from '../../src/shard.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { tableNames } from '../../src/tables/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { validateDataPackage } from '../helpers/frictionless.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 17, studies: 1, responses: 3 });
});
afterAll(async () => {
  await sandbox.close();
});

interface Described {
  resources: { name: string; path?: unknown; data?: unknown[] }[];
}

describe("current/'s descriptor", () => {
  it('describes every table, with no rows, for a shard that owns no study', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { output: { formats: ['csv', 'parquet'] } });
      const [study] = sandbox.studies();
      const shards = [1, 2].map((index) => ({ index, count: 2 }));
      const empty = shards.find((shard) => !inShard(study!.id, shard))!;
      const owner = shards.find((shard) => inShard(study!.id, shard))!;
      const current = join(out, 'test', 'current');

      expect((await runAgainst(sandbox, config, { shard: empty })).status).toBe('complete');
      const name = `datapackage-shard-${empty.index}-of-2.json`;
      expect((await validateDataPackage(current, name)).errors).toEqual([]);
      const described = JSON.parse(await readFile(join(current, name), 'utf8')) as Described;
      const expected = currentFormats(config.output.formats).flatMap((format) =>
        tableNames.map((table) => resourceName(table, format)),
      );
      expect(described.resources.map((resource) => resource.name).sort()).toEqual(expected.sort());
      for (const resource of described.resources) {
        expect(resource.data).toEqual([]);
        expect(resource).not.toHaveProperty('path');
      }

      // With the other shard's parts, `describe` names files for every table again.
      expect((await runAgainst(sandbox, config, { shard: owner })).status).toBe('complete');
      await describeCurrent(new LocalStorage(join(out, 'test')));
      const report = await validateDataPackage(current);
      expect(report.errors).toEqual([]);
      expect(report.read.responses).toBe(3);
      const whole = JSON.parse(await readFile(join(current, 'datapackage.json'), 'utf8')) as Described;
      expect(whole.resources.filter((resource) => resource.data !== undefined)).toEqual([]);
    });
  });
});
