/**
 * Files a killed run was writing under temporary names, anywhere in a local output but its run
 * folders: removed by removeLeftovers when their writer, on this machine, is gone; never one of
 * a live process; another machine's only once untouched for the grace period. Names come from
 * real writes (put, a copy from another file system) and, for other processes, as documented.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.ts';
import type { LeftoverOptions } from '../../src/storage/types.ts';
import { withTempDir } from '../helpers/environment.ts';

/** This machine as the names carry it (src/storage/local-temporaries.ts). */
const MACHINE = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);
const OTHER_MACHINE = MACHINE === 'deadbeef' ? 'feedf00d' : 'deadbeef';
const HOUR_MS = 3_600_000;
const options: LeftoverOptions = { graceMs: HOUR_MS, manifest: 'manifest.json', owns: () => true };

let live: ChildProcess;
let deadPid: number;
beforeAll(async () => {
  live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 600_000)'], { stdio: 'ignore' });
  const gone = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => gone.on('exit', resolve));
  deadPid = gone.pid as number;
});
afterAll(() => {
  live.kill('SIGKILL');
});

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort();
}

async function plant(root: string, path: string, options: { old?: boolean } = {}): Promise<void> {
  const absolute = join(root, path);
  await mkdir(dirname(absolute), { recursive: true });
  await writeFile(absolute, 'response_id,answer\nr1,"private text"\n');
  if (options.old) {
    const then = new Date(Date.now() - 2 * HOUR_MS);
    await utimes(absolute, then, then);
  }
}

describe('temporary files a killed run left in a local output', () => {
  it('are removed when their process on this machine is gone, and only then', async () => {
    await withTempDir(async (root) => {
      const store = new LocalStorage(root);
      await store.put('state/study.json', '{}');
      await store.put('current/answers/bucket=01/part-r1.parquet', 'the part');
      const kept = [
        '.lock',
        '.pending/r2.json',
        `current/answers/bucket=01/.${live.pid}-${MACHINE}-1700000000000-part-r2.parquet.writing`,
        `current/answers/bucket=02/.${deadPid}-${OTHER_MACHINE}-1700000000000-part-r2.parquet.writing`,
        `state/.${live.pid}-1700000000000-study.json.writing`,
        `state/other.json.${deadPid}.tmp`,
      ];
      const removed = [
        `current/answers/bucket=01/.${deadPid}-${MACHINE}-1700000000000-part-r2.parquet.writing`,
        `.${deadPid}-${MACHINE}-1700000000000-latest.writing`,
        `.${deadPid}-${MACHINE}-1700000000000-.lock.writing`,
        `sources/.${deadPid}-${MACHINE}-1700000000000-source.json.writing`,
      ];
      const removedOld = [
        `current/answers/bucket=03/.${deadPid}-${OTHER_MACHINE}-1700000000000-part-r2.parquet.writing`,
        `current/README.md.${deadPid}.tmp`,
        `state/.${deadPid}-1700000000000-study.json.writing`,
      ];
      const keptOld = [`state/third.json.${live.pid}.tmp`];
      for (const path of [...kept, ...removed]) await plant(root, path);
      for (const path of [...removedOld, ...keptOld]) await plant(root, path, { old: true });

      expect(await store.hasLeftovers('runs', options)).toBe(true);
      await store.removeLeftovers('runs', options);
      const expected = [
        ...kept,
        ...keptOld,
        'state/study.json',
        'current/answers/bucket=01/part-r1.parquet',
      ].sort();
      expect(await filesUnder(root)).toEqual(expected);
      expect(await store.hasLeftovers('runs', options)).toBe(false);
      // What put wrote is whole under its name.
      expect(await readFile(join(root, 'state', 'study.json'), 'utf8')).toBe('{}');
    });
  });

  it("never removes this process's own, and finds nothing in an output without any", async () => {
    await withTempDir(async (root) => {
      const store = new LocalStorage(root);
      const own = `current/.${process.pid}-${MACHINE}-1700000000000-README.md.writing`;
      await plant(root, own, { old: true });
      await store.put('latest', 'r1\n');
      expect(await store.hasLeftovers('runs', options)).toBe(false);
      await store.removeLeftovers('runs', options);
      expect(await filesUnder(root)).toEqual([own, 'latest'].sort());
    });
    await withTempDir(async (root) => {
      expect(await new LocalStorage(join(root, 'missing')).hasLeftovers('runs', options)).toBe(false);
    });
  });
});
