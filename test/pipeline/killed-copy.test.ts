/**
 * A run killed (SIGKILL) while it copies a part into current/ from another file system ($TMPDIR
 * on a tmpfs) leaves the copy under its hidden temporary name, respondents' text; the next run,
 * one with nothing new, removes it and leaves no temporary file anywhere in the output. A live
 * run's temporary file (another shard's, stopped mid-copy) is left alone, and that run still
 * completes.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { inShard } from '../../src/shard.ts';
import { runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { KEY_ENV, letFinish, spawnRun, stopped } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 23, studies: 6, responses: 12 });
});
afterAll(async () => {
  await sandbox?.close();
});

/** Where local storage writes a file before renaming it (src/storage/local-temporaries.ts). */
const TEMPORARY = /^\.(\d+)-[0-9a-f]{8}-\d+-.+\.writing$/;

/** Every file under `root` whose name is hidden, as paths relative to it. */
async function hiddenFiles(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.startsWith('.'))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)))
    .sort();
}

/** A $TMPDIR on another file system than the output (tmpfs), so parts are copied, not renamed. */
async function withScratchOnTmpfs(use: (dir: string, tmp: string) => Promise<void>): Promise<void> {
  const tmp = await mkdtemp('/dev/shm/study-export-test-');
  try {
    await withTempDir(async (dir) => {
      expect((await stat(tmp)).dev, '/dev/shm must be another file system').not.toBe((await stat(dir)).dev);
      await use(dir, tmp);
    });
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

function runAgain(dir: string, tmp: string, args: string[] = []) {
  return runCli(['run', '--config', join(dir, 'killable.yaml'), ...args], {
    env: { [KEY_ENV]: sandbox.api_key, TMPDIR: tmp },
  });
}

/** Resolves with the exit code (null when killed by a signal). */
function exitCode(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.on('exit', (code) => resolve(code)));
}

async function scratchFolders(tmp: string): Promise<string[]> {
  return (await readdir(tmp)).filter((name) => name.startsWith('study-export-'));
}

describe('a run killed while it copies a part into current/', () => {
  it('leaves the copy under a temporary name, which the next run with nothing new removes', async () => {
    await withScratchOnTmpfs(async (dir, tmp) => {
      const out = join(dir, 'out');
      const root = join(out, 'test');
      const first = await spawnRun(sandbox, dir, out, { env: { TMPDIR: tmp } });
      expect(await first.exited).toBe(null);
      expect(await hiddenFiles(root)).toEqual([]);

      const { child, exited } = await spawnRun(sandbox, dir, out, {
        args: ['--full'],
        env: { TMPDIR: tmp, STUDY_EXPORT_KILL_AT: 'local-copy-written' },
      });
      expect(await exited).toBe('SIGKILL');
      const left = (await hiddenFiles(join(root, 'current'))).filter((path) =>
        TEMPORARY.test(basename(path)),
      );
      // Up to four buckets are published at once: the others' copies were under way too.
      expect(left.length).toBeGreaterThan(0);
      for (const path of left) {
        expect(TEMPORARY.exec(basename(path))?.[1]).toBe(String(child.pid));
        expect(path).toMatch(/^[a-z_]+\/bucket=\d\d\/\.\d+-.+-part-.+\.(parquet|csv)\.writing$/);
      }
      // The one that reached the kill point is whole; the others may have just begun.
      const sizes = await Promise.all(
        left.map(async (path) => (await stat(join(root, 'current', path))).size),
      );
      expect(Math.max(...sizes)).toBeGreaterThan(0);

      const next = await runAgain(dir, tmp);
      expect(next, next.stderr).toMatchObject({ code: 0 });
      expect(next.stdout).toMatch(/^nothing new since run /);
      expect(await hiddenFiles(root)).toEqual([]);
      expect(await scratchFolders(tmp)).toEqual([]);

      // Killed as it writes its first small file (its record in .pending/), before the rename:
      // the next run with nothing new finds the file by its name and removes it.
      const second = await spawnRun(sandbox, dir, out, {
        args: ['--full'],
        env: { TMPDIR: tmp, STUDY_EXPORT_KILL_AT: 'local-put-written' },
      });
      expect(await second.exited).toBe('SIGKILL');
      const record = (await hiddenFiles(root)).filter((path) => TEMPORARY.test(basename(path)));
      expect(record).toEqual([expect.stringMatching(new RegExp(`^\\.pending/\\.${second.child.pid}-`))]);
      const again = await runAgain(dir, tmp);
      expect(again, again.stderr).toMatchObject({ code: 0 });
      expect(again.stdout).toMatch(/^nothing new since run /);
      expect(await hiddenFiles(root)).toEqual([]);
    });
  });

  it("leaves a live run's alone: another shard's, stopped mid-copy, which then completes", async () => {
    const shards = [1, 2].map((index) => ({ index, count: 2 }));
    for (const shard of shards) {
      expect(sandbox.studies().filter((study) => inShard(study.id, shard)).length).toBeGreaterThan(0);
    }
    await withScratchOnTmpfs(async (dir, tmp) => {
      const out = join(dir, 'out');
      const root = join(out, 'test');
      for (const shard of ['1/2', '2/2']) {
        const first = await spawnRun(sandbox, dir, out, { args: ['--shard', shard], env: { TMPDIR: tmp } });
        expect(await first.exited).toBe(null);
      }

      // Shard 1 stopped mid-copy (live); then shard 2, which clears what killed runs left as it
      // takes its lock (and must leave shard 1's copy), killed mid-copy.
      const live = await spawnRun(sandbox, dir, out, {
        args: ['--shard', '1/2', '--full'],
        env: { TMPDIR: tmp, STUDY_EXPORT_STOP_AT: 'local-copy-written' },
      });
      const liveExit = exitCode(live.child);
      try {
        await stopped(live.child.pid as number);
        const killed = await spawnRun(sandbox, dir, out, {
          args: ['--shard', '2/2', '--full'],
          env: { TMPDIR: tmp, STUDY_EXPORT_KILL_AT: 'local-copy-written' },
        });
        expect(await killed.exited).toBe('SIGKILL');
        const byWriter = async () => {
          const found = (await hiddenFiles(join(root, 'current'))).filter((path) =>
            TEMPORARY.test(basename(path)),
          );
          const of = (child: ChildProcess) =>
            found.filter((path) => TEMPORARY.exec(basename(path))?.[1] === String(child.pid));
          return { killed: of(killed.child), live: of(live.child), all: found };
        };
        const before = await byWriter();
        expect(before.killed).not.toEqual([]);
        expect(before.live).not.toEqual([]);
        expect(before.all).toEqual([...before.killed, ...before.live].sort());
        const liveBytes = await Promise.all(before.live.map((path) => readFile(join(root, 'current', path))));

        // Shard 2's next run: nothing new, its killed run's record undone and its copy removed.
        const next = await runAgain(dir, tmp, ['--shard', '2/2']);
        expect(next, next.stderr).toMatchObject({ code: 0 });
        expect(next.stdout).toMatch(/^nothing new since run /);
        const after = await byWriter();
        expect(after.killed).toEqual([]);
        expect(after.all).toEqual(before.live);
        for (const [i, path] of before.live.entries()) {
          expect(await readFile(join(root, 'current', path))).toEqual(liveBytes[i]);
        }
        expect(
          (await scratchFolders(tmp)).filter((name) => name.includes(`-${live.child.pid}-`)),
        ).not.toEqual([]);
      } catch (error) {
        live.child.kill('SIGKILL');
        throw error;
      }
      // Stopped again at each of its copies: let go each time, it completes.
      expect(await letFinish(live.child, liveExit)).toBe(0);
      expect(await hiddenFiles(root)).toEqual([]);
      expect(await scratchFolders(tmp)).toEqual([]);
    });
  });
});
