/**
 * The local lock: who holds it, read only; a dead run's lock taken over; a live run's never
 * touched, even when it replaced a stale one between a reader's look and its removal.
 */
import { spawnSync } from 'node:child_process';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BusyError } from '../../src/errors.ts';
import { acquireLock, lockState, removeStaleLock } from '../../src/storage/local-lock.ts';
import { withTempDir } from '../helpers/environment.ts';

/** The pid of a process that has exited. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '0']).pid as number;
}

describe('the local lock', () => {
  it("is no one's, a dead run's or a live one's, by its pid", async () => {
    await withTempDir(async (dir) => {
      const lock = join(dir, '.lock');
      expect(await lockState(lock)).toEqual({ held: 'no' });
      await writeFile(lock, String(deadPid()));
      expect(await lockState(lock)).toEqual({ held: 'dead' });
      // A lock of an earlier version: its pid alone, taken when the file was written.
      await writeFile(lock, String(process.ppid));
      const { mtime } = await stat(lock);
      expect(await lockState(lock)).toEqual({
        held: 'live',
        by: `process ${process.ppid} since ${mtime.toISOString()}`,
      });
      await writeFile(lock, `${process.ppid}\nbuild-7\n2026-11-28T02:30:01.000Z\n`);
      expect(await lockState(lock)).toEqual({
        held: 'live',
        by: `process ${process.ppid} on build-7 since 2026-11-28T02:30:01.000Z`,
      });
    });
  });

  it('names its holder: pid, machine and since when, and refuses with exit 75', async () => {
    await withTempDir(async (dir) => {
      const lock = join(dir, '.lock');
      const before = Date.now();
      await acquireLock(lock);
      const [pid, host, since] = (await readFile(lock, 'utf8')).split('\n');
      expect([pid, host]).toEqual([String(process.pid), hostname()]);
      expect(Date.parse(since ?? '')).toBeGreaterThanOrEqual(before - 1000);
      await writeFile(lock, `${process.ppid}\n${host}\n${since}\n`);
      const refused = await acquireLock(lock).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(BusyError);
      expect((refused as BusyError).exitCode).toBe(75);
      expect((refused as Error).message).toBe(
        `another run of this pipeline is in progress (process ${process.ppid} on ${host} since ${since} holds ${lock}); try again once it has finished, or stop it`,
      );
    });
  });

  it("takes a dead run's lock over, and refuses a live one's without writing beside it", async () => {
    await withTempDir(async (dir) => {
      const lock = join(dir, '.lock');
      await writeFile(lock, String(deadPid()));
      await acquireLock(lock);
      expect((await readFile(lock, 'utf8')).split('\n')[0]).toBe(String(process.pid));
      await writeFile(lock, String(process.ppid));
      await expect(acquireLock(lock)).rejects.toThrow(/another run of this pipeline is in progress/);
      expect(await readdir(dir)).toEqual(['.lock']);
      expect(await readFile(lock, 'utf8')).toBe(String(process.ppid));
    });
  });

  it('removes a stale lock only while it is the one judged stale', async () => {
    await withTempDir(async (dir) => {
      const lock = join(dir, '.lock');
      await writeFile(lock, String(deadPid()));
      expect(await removeStaleLock(lock)).toBe(true);
      expect(await readdir(dir)).toEqual([]);
      // A live run's lock is never removed, nor anything left beside it.
      await writeFile(lock, String(process.ppid));
      expect(await removeStaleLock(lock)).toBe(false);
      expect(await readdir(dir)).toEqual(['.lock']);
      expect(await readFile(lock, 'utf8')).toBe(String(process.ppid));
    });
  });
});
