/**
 * Paths a process must not leave behind should it exit before it is done (an uncaught error,
 * Ctrl-C or a CI cancel, which the CLI turns into process.exit). 'exit' allows only
 * synchronous work, so removal there is rmSync. Only SIGKILL skips this; whoever starts next
 * clears those leftovers by their owner's pid (see isProcessAlive).
 */
import { existsSync, rmSync } from 'node:fs';

const removeAtExit = new Set<string>();

/** Registers `path` for removal should the process exit first; returns the way to forget it. */
export function removeIfExitingFirst(path: string): () => void {
  if (removeAtExit.size === 0) process.once('exit', removeLeftovers);
  removeAtExit.add(path);
  return () => {
    removeAtExit.delete(path);
    if (removeAtExit.size === 0) process.off('exit', removeLeftovers);
  };
}

/**
 * Newest first: a run folder goes before the lock that guarded it. The thread pool may still
 * be creating a file in a folder while it is removed (a listing spill, a part being prepared),
 * which fails the removal with ENOTEMPTY, or makes the folder again just after: it is tried
 * again, and one path that still cannot be removed does not keep the others.
 */
function removeLeftovers(): void {
  const paths = [...removeAtExit].reverse();
  for (let attempt = 0; attempt < REMOVALS; attempt++) {
    for (const path of paths) {
      try {
        rmSync(path, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 });
      } catch {
        // The next run removes it by its owner's pid.
      }
    }
    // What the thread pool had begun is done within milliseconds; then nothing makes them again.
    Atomics.wait(pause, 0, 0, PAUSE_MS);
    if (!paths.some((path) => existsSync(path))) return;
  }
}

const REMOVALS = 3;
const PAUSE_MS = 20;
const pause = new Int32Array(new SharedArrayBuffer(4));

/** Whether a process with this id exists (EPERM: it does, owned by someone else). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
