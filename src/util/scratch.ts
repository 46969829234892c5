/**
 * The run's scratch folder: one folder in the OS temp directory (TMPDIR) per run, holding
 * every temporary file the run makes outside its output (listing spills, media bodies on
 * their way into media.zip). It is local whatever the output is, removed when the run ends
 * by any path but SIGKILL, and the folders of killed runs are removed by the next run: the
 * owner's pid is in the name, as it is in the pipeline's lock. (What versions before the
 * scratch folder left in the temporary directory is src/upgrade/'s.)
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, sep } from 'node:path';
import { SystemError } from '../errors.ts';
import { isProcessAlive, removeIfExitingFirst } from './exit-cleanup.ts';
import { diskFullError } from './system-errors.ts';

const PREFIX = 'study-export-';
/** study-export-<pid>-<random>; other study-export-* folders are not ours to judge. */
const OWNED = /^study-export-(\d+)-[A-Za-z0-9]{6}$/;

export interface Scratch {
  readonly dir: string;
  remove(): Promise<void>;
}

export async function openScratch(parent = tmpdir()): Promise<Scratch> {
  await removeOrphans(parent);
  const dir = await mkdtemp(join(parent, `${PREFIX}${process.pid}-`));
  const forget = removeIfExitingFirst(dir);
  return {
    dir,
    async remove() {
      // Retried: after a failure, writes of other studies may still be landing in it. Should
      // it still fail, the exit handler tries again, and the next run after that.
      const removed = await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 }).then(
        () => true,
        () => false,
      );
      if (removed) forget();
    },
  };
}

/** The scratch folder `path` lies in (any run's), or null when it is not in one. */
export function scratchFolderOf(path: string, parent = tmpdir()): string | null {
  const inside = relative(parent, path);
  if (inside === '' || inside.startsWith('..') || isAbsolute(inside)) return null;
  const [folder] = inside.split(sep);
  return folder !== undefined && OWNED.test(folder) ? join(parent, folder) : null;
}

/**
 * A full disk under the scratch folder, said as the temporary directory it is (not as the
 * output, which may be on another disk): exit 1, nothing committed. Null for anything else.
 */
export function scratchFull(error: unknown): SystemError | null {
  const full = diskFullError(error);
  const folder = full?.path === undefined ? null : scratchFolderOf(full.path);
  if (!full || folder === null) return null;
  return new SystemError(
    (full.error as NodeJS.ErrnoException).code === 'EDQUOT' ? 'EDQUOT' : 'ENOSPC',
    `the temporary directory is full: no space left on the device holding the run's scratch folder ${folder} (in $TMPDIR, ${tmpdir()}); nothing was committed. Free space there, or point TMPDIR at a disk with room`,
    { exitCode: 1, context: { file: folder }, cause: error },
  );
}

/** Scratch folders whose owner is gone (killed with SIGKILL, a lost machine's container). */
export async function removeOrphans(parent = tmpdir()): Promise<string[]> {
  const removed: string[] = [];
  const names = await readdir(parent).catch(() => [] as string[]);
  for (const name of names) {
    const owner = Number(OWNED.exec(name)?.[1]);
    if (!Number.isInteger(owner) || owner === process.pid || isProcessAlive(owner)) continue;
    await rm(join(parent, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}
