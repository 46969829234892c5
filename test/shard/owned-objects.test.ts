/**
 * What only one writer may write, with shards: the record of the service (a shard's own, the
 * newest of all deciding), the state (a shard's own studies; a state.json of before left for an
 * unsharded run), one --state file (refused), and current/'s whole descriptor (`describe` only,
 * and not while a run holds a lock).
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeCurrent } from '../../src/publish/describe.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { inShard } from '../../src/shard.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { withTempDir } from '../helpers/environment.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 63, studies: 6, responses: 2 });
});
afterAll(async () => {
  await sandbox.close();
});

const one = { index: 1, count: 2 };
const two = { index: 2, count: 2 };

describe('objects a shard owns', () => {
  it("records the service in its own object, and a shard configured for another service is refused by the other's record", async () => {
    await withTempDir(async (out) => {
      const root = join(out, 'test');
      expect((await runAgainst(sandbox, sandboxConfig(sandbox, out), { shard: one })).status).toBe(
        'complete',
      );
      expect(await readdir(join(root, 'sources'))).toEqual(['shard-1-of-2.json']);
      expect(await readdir(root)).not.toContain('source.json');
      const elsewhere = sandboxConfig(sandbox, out, { source: { base_url: 'http://127.0.0.1:9' } });
      await expect(runAgainst(sandbox, elsewhere, { shard: two })).rejects.toThrow(
        /this output belongs to .*sources\/shard-1-of-2\.json\), but the pipeline now reads http:\/\/127\.0\.0\.1:9/,
      );
      // Accepted (recorded at once, whatever the run then meets), the change is shard 2's own
      // record, the newest: shard 1 is held to it too.
      await expect(runAgainst(sandbox, elsewhere, { shard: two, acceptNewSource: true })).rejects.toThrow();
      expect((await readdir(join(root, 'sources'))).sort()).toEqual([
        'shard-1-of-2.json',
        'shard-2-of-2.json',
      ]);
      await expect(runAgainst(sandbox, sandboxConfig(sandbox, out), { shard: one })).rejects.toThrow(
        /this output belongs to http:\/\/127\.0\.0\.1:9 \(.*sources\/shard-2-of-2\.json\)/,
      );
    });
  });

  it("writes only its own studies' state, and leaves a state.json of before as it is", async () => {
    await withTempDir(async (out) => {
      const root = join(out, 'test');
      await mkdir(root, { recursive: true });
      const legacy = `${JSON.stringify({ version: 1, studies: {} }, null, 2)}\n`;
      await writeFile(join(root, 'state.json'), legacy);
      const result = await runAgainst(sandbox, sandboxConfig(sandbox, out), { shard: one });
      expect(result.status).toBe('complete');
      const own = sandbox.studies().filter((study) => inShard(study.id, one));
      expect((await readdir(join(root, 'state'))).sort()).toEqual(
        own.map((study) => `${study.id}.json`).sort(),
      );
      expect(await readFile(join(root, 'state.json'), 'utf8')).toBe(legacy);
      expect(await readdir(root)).not.toContain('state.json.migrated');
    });
  });

  it('refuses --state FILE, which every shard would write', async () => {
    await withTempDir(async (out) => {
      await expect(
        runAgainst(sandbox, sandboxConfig(sandbox, out), { shard: one, stateFile: join(out, 'state.json') }),
      ).rejects.toThrow(/--state .* keeps every study's state in one file, which the shards/);
    });
  });

  it('leaves current/datapackage.json to describe, which writes nothing while a shard runs', async () => {
    await withTempDir(async (out) => {
      const root = join(out, 'test');
      for (const shard of [one, two]) {
        expect((await runAgainst(sandbox, sandboxConfig(sandbox, out), { shard })).status).toBe('complete');
      }
      const before = (await readdir(join(root, 'current'))).sort();
      expect(before).toContain('datapackage-shard-1-of-2.json');
      expect(before).not.toContain('datapackage.json');
      // A lock held by a live process (this test's parent): a shard still exporting.
      await writeFile(join(root, '.lock-shard-2-of-2'), String(process.ppid));
      await expect(describeCurrent(new LocalStorage(root))).rejects.toThrow(
        /another run of this pipeline is in progress \(process \d+ since \S+ holds \S+\.lock-shard-2-of-2\); describe current\/ once every shard has finished/,
      );
      expect((await readdir(join(root, 'current'))).sort()).toEqual(before);
    });
  });
});
