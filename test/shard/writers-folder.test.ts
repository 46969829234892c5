/**
 * Two shards at the same time into one folder, two nights running: every write of the storage
 * layer (files created, put, moved in, deleted, leases) is observed, with the shard that made
 * it, and no path is written by both. Each shard's own descriptor of current/, and after
 * `describe` current/datapackage.json, are read by the Frictionless reference library: every
 * file they name is there, each study's SPSS file is named by its shard's, and current/ holds
 * every response once.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { describeCurrent } from '../../src/publish/describe.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { inShard } from '../../src/shard.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { withTempDir } from '../helpers/environment.ts';
import { validateDataPackage } from '../helpers/frictionless.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';
import { sandboxResponseIds } from '../helpers/run-files.ts';
import { responsesInShardDescriptors } from '../helpers/shard.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 61, studies: 8, responses: 5 });
});
afterAll(async () => {
  await sandbox.close();
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** Every path the storage layer writes, with the shards that wrote it. */
class WriteLog {
  readonly writers = new Map<string, Set<string>>();
  readonly #shard = new AsyncLocalStorage<string>();

  /** Observes LocalStorage's writing methods; each call still goes through as it is. */
  observe(): void {
    const methods = {
      create: (path: string) => path,
      put: (path: string) => path,
      putIfAbsent: (path: string) => path,
      moveIn: (_local: string, path: string) => path,
      moveFolderIn: (_local: string, path: string) => `${path}/`,
      delete: (path: string) => path,
      deleteAll: (prefix: string) => `${prefix}/`,
      stage: (prefix: string) => `${prefix}/`,
      lease: (path: string) => path,
    } as const;
    for (const [method, pathOf] of Object.entries(methods)) {
      const original = LocalStorage.prototype[method as keyof typeof methods] as (
        ...args: unknown[]
      ) => unknown;
      const log = this;
      vi.spyOn(LocalStorage.prototype, method as keyof typeof methods).mockImplementation(function (
        this: LocalStorage,
        ...args: unknown[]
      ) {
        const shard = log.#shard.getStore();
        if (shard !== undefined) {
          const key = this.describe((pathOf as (...a: unknown[]) => string)(...args));
          const writers = log.writers.get(key) ?? new Set();
          log.writers.set(key, writers.add(shard));
        }
        return original.apply(this, args);
      } as never);
    }
  }

  as<T>(shard: string, work: () => Promise<T>): Promise<T> {
    return this.#shard.run(shard, work);
  }

  /** Paths written by more than one shard (a folder's write counts for every path under it). */
  shared(): string[] {
    const keys = [...this.writers.keys()];
    const within = (key: string, folder: string) => folder.endsWith('/') && key.startsWith(folder);
    return keys.filter((key) => {
      const touching = keys.filter((other) => other === key || within(key, other) || within(other, key));
      return new Set(touching.flatMap((other) => [...(this.writers.get(other) ?? [])])).size > 1;
    });
  }
}

describe('two shards at once into one folder', () => {
  it('never write the same file, and every descriptor names only files that are there', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { output: { formats: ['csv', 'parquet', 'sav'] } });
      const root = join(out, 'test');
      const shards = [1, 2].map((index) => ({ index, count: 2 }));
      for (const shard of shards) {
        expect(sandbox.studies().filter((study) => inShard(study.id, shard)).length).toBeGreaterThan(0);
      }
      const log = new WriteLog();
      log.observe();
      const night = () =>
        Promise.all(
          shards.map((shard) => log.as(`shard ${shard.index}`, () => runAgainst(sandbox, config, { shard }))),
        );

      const first = await night();
      expect(first.map((result) => result.status)).toEqual(['complete', 'complete']);
      await describeCurrent(new LocalStorage(root));
      // The next night every study has a changed response: each shard replaces all its parts.
      const later = new Date(Date.now() + 60_000);
      for (const study of sandbox.studies()) {
        const [response] = sandbox.responses(study.link_id);
        sandbox.touchResponse(study.link_id, response!.id, later);
      }
      const second = await night();
      expect(second.map((result) => result.status)).toEqual(['complete', 'complete']);

      expect(log.shared()).toEqual([]);
      const written = [...log.writers.keys()].map((key) => key.slice(root.length + 1));
      for (const label of ['shard-1-of-2', 'shard-2-of-2']) {
        expect(written).toContain(`current/datapackage-${label}.json`);
        expect(written).toContain(`sources/${label}.json`);
        expect(written).toContain(`latest-${label}`);
        expect(written).toContain(`.lock-${label}`);
      }
      // Shards leave the whole dataset's descriptor and guide to `describe`.
      for (const shared of [
        'current/datapackage.json',
        'current/README.md',
        'current/report.html',
        'source.json',
      ]) {
        expect(written).not.toContain(shared);
      }

      const current = join(root, 'current');
      expect(await responsesInShardDescriptors(current, 2)).toBe(sandboxResponseIds(sandbox).length);
      // Each study's files beside its wide sheet (its SPSS file) are in its shard's descriptor.
      const savFiles = (await readdir(join(current, 'sav'), { recursive: true })).filter((f) =>
        f.endsWith('.sav'),
      );
      expect(savFiles).toHaveLength(sandbox.studies().length);
      const listed = (
        await Promise.all(
          ['shard-1-of-2', 'shard-2-of-2'].map(async (label) => {
            const text = await readFile(join(current, `datapackage-${label}.json`), 'utf8');
            return (JSON.parse(text) as { resources: { path: string | string[] }[] }).resources.flatMap(
              (r) => r.path,
            );
          }),
        )
      ).flat();
      for (const file of savFiles)
        expect(
          listed.filter((path) => path === `sav/${file}`),
          file,
        ).toHaveLength(1);

      const described = await describeCurrent(new LocalStorage(root));
      expect(Object.values(described.runs).sort()).toEqual(
        second.map((result) => result.runDir!.split('/').pop()).sort(),
      );
      const report = await validateDataPackage(current);
      expect(report.errors).toEqual([]);
      expect(report.read.responses).toBe(sandboxResponseIds(sandbox).length);
    });
  });
});
