/**
 * The pipeline's lock on a file system: a file created exclusively, holding its run's pid.
 * One whose process is gone was left by a run that was killed (SIGKILL skips every exit
 * handler) and is stale.
 *
 * Taking over a stale lock must never remove a live one. Between reading the dead pid and
 * removing the file, another run may have taken the lock over itself; so the file is first
 * renamed aside, which moves whatever file is there at that moment, and removed only when it
 * is the very file judged stale (the same inode, the same pid). Any other is a live run's
 * lock, and is put back.
 */
import { link, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { BusyError } from '../errors.ts';
import { isProcessAlive } from '../util/exit-cleanup.ts';
import { holderText, outputBusy } from './lease-holder.ts';
import { hiddenPathFor } from './local-temporaries.ts';
import type { LeaseState } from './types.ts';

/** Creates the lock for this process, taking over a stale one; fails naming a live holder. */
export async function acquireLock(lockPath: string): Promise<void> {
  // A live holder is named before anything is written beside its lock.
  for (let attempt = 0; attempt < 3; attempt++) {
    const state = await lockState(lockPath);
    if (state.held === 'live')
      throw outputBusy(lockPath, state.by, 'try again once it has finished, or stop it');
    if (state.held === 'dead') await removeStaleLock(lockPath);
    if (await createLock(lockPath)) return;
  }
  throw new BusyError(`could not take the lock ${lockPath}: other runs kept taking it; try again later`, {
    context: { file: lockPath },
  });
}

/** Who holds the lock: nobody, a process that is gone, or a live one. */
export async function lockState(lockPath: string): Promise<LeaseState> {
  const holder = await readHolder(lockPath);
  if (holder === null) return { held: 'no' };
  if (Number.isInteger(holder.pid) && holder.pid !== process.pid && isProcessAlive(holder.pid)) {
    return { held: 'live', by: holderText(holder) };
  }
  return { held: 'dead' };
}

/**
 * Removes the lock if it is still the stale one (see the top); returns whether it did. A live
 * run's lock found in its place is put back where it was.
 */
export async function removeStaleLock(lockPath: string): Promise<boolean> {
  const judged = await readHolder(lockPath);
  if (judged === null || (judged.pid !== process.pid && isProcessAlive(judged.pid))) return false;
  const aside = hiddenPathFor(lockPath);
  try {
    await rename(lockPath, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  const moved = await readHolder(aside);
  if (moved !== null && moved.inode === judged.inode && Object.is(moved.pid, judged.pid)) {
    await rm(aside, { force: true });
    return true;
  }
  // Not the file judged: a run took the lock meanwhile. Back under its name, unless yet
  // another run has made one there since (then this one's run holds none, and says so).
  await link(aside, lockPath).catch(() => {});
  await rm(aside, { force: true });
  return false;
}

/**
 * What a lock holds: its run's pid on the first line (all an earlier version wrote, and all it
 * reads), then the machine and when it was taken.
 */
function lockText(): string {
  return `${process.pid}\n${hostname()}\n${new Date().toISOString()}\n`;
}

/**
 * The lock appears with its pid in it, never empty (a reader would take an empty one for a dead
 * run's): written under a temporary name of this process's, then linked to the lock's name, which fails
 * when the lock exists.
 */
async function createLock(lockPath: string): Promise<boolean> {
  const written = hiddenPathFor(lockPath);
  await writeFile(written, lockText());
  try {
    await link(written, lockPath);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    // A file system without hard links: created in place, with a moment where it is empty.
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'ENOSYS') return createInPlace(lockPath);
    throw error;
  } finally {
    await rm(written, { force: true });
  }
}

async function createInPlace(lockPath: string): Promise<boolean> {
  try {
    const handle = await open(lockPath, 'wx');
    await handle.writeFile(lockText());
    await handle.close();
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

async function readHolder(
  lockPath: string,
): Promise<{ pid: number; host: string | null; since: string | null; inode: number } | null> {
  try {
    const { ino, mtime } = await stat(lockPath);
    const [pid = '', host, since] = (await readFile(lockPath, 'utf8')).split('\n');
    return {
      pid: Number.parseInt(pid, 10),
      host: host?.trim() || null,
      // A lock of an earlier version holds its pid alone: it was taken when it was written.
      since: since?.trim() || mtime.toISOString(),
      inode: ino,
    };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}
