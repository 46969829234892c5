/**
 * The temporary names the local storage writes a file under before it renames it into place
 * (a part copied into current/ from another file system, every file of current/, state/,
 * sources/, `latest`, the lock being made). A run killed with SIGKILL between the write and the
 * rename leaves that file, which may hold respondents' text, and nothing renames it later.
 *
 * The name is hidden and says who wrote it: `.<pid>-<machine>-<ms>-<name>.writing`, where
 * <machine> is a short hash of the host name. So the next run can judge it as it judges a
 * lock: left behind when its process, on this machine, is gone. A file of another machine (an
 * output on a shared volume) cannot be asked whether its process lives; it is left behind once
 * nothing has written to it for the grace period.
 */
import { createHash } from 'node:crypto';
import { lstat, readdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { isProcessAlive } from '../util/exit-cleanup.ts';

/** How the names of files being written end; such a file is never read (src/current). */
export const WRITING_SUFFIX = '.writing';

/** This machine in a temporary name: 8 hex digits of its host name's SHA-256. */
const MACHINE = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);

/** The hidden name a file is written under, beside `absolutePath`, until it is renamed into place. */
export function hiddenPathFor(absolutePath: string): string {
  return join(
    dirname(absolutePath),
    `.${process.pid}-${MACHINE}-${Date.now()}-${basename(absolutePath)}${WRITING_SUFFIX}`,
  );
}

/** The process that wrote a temporary file; machine null for the names of earlier versions. */
interface Writer {
  pid: number;
  machine: string | null;
}

const TEMPORARY = /^\.(\d+)-([0-9a-f]{8})-\d+-.+\.writing$/s;
/** Earlier versions' names, without the machine: `.<pid>-<ms>-<name>.writing`, `<name>.<pid>.tmp`. */
const EARLIER = [/^\.(\d+)-\d+-.+\.writing$/s, /^.+\.(\d+)\.tmp$/s];

/** Who wrote the file `name`, when it is a temporary name of the local storage's; else null. */
export function writerOf(name: string): Writer | null {
  const match = TEMPORARY.exec(name);
  if (match) return { pid: Number(match[1]), machine: match[2] as string };
  for (const earlier of EARLIER) {
    const old = earlier.exec(name);
    if (old) return { pid: Number(old[1]), machine: null };
  }
  return null;
}

/**
 * Whether the temporary file was left by a process that is gone: one of this machine whose
 * process no longer exists, or else one untouched since `cutoff` (ms since the epoch) whose pid
 * names no process here. Never one of this process's.
 */
export function leftBehind(writer: Writer, modifiedAt: number, cutoff: number): boolean {
  if (writer.machine === MACHINE) return writer.pid !== process.pid && !isProcessAlive(writer.pid);
  // An earlier version's name does not say whose machine: a live process here may be its writer.
  if (writer.machine === null && (writer.pid === process.pid || isProcessAlive(writer.pid))) return false;
  return modifiedAt <= cutoff;
}

/**
 * The temporary files under `root` (absolute paths) left by processes that are gone, in every
 * folder but those named in `skip` (directly under the root). Links are not followed.
 */
export async function temporariesLeftBehind(
  root: string,
  options: { skip: readonly string[]; cutoff: number },
): Promise<string[]> {
  const top = await readdir(root, { withFileTypes: true }).catch(ifMissing([]));
  const candidates: string[] = [];
  for (const entry of top) {
    if (entry.isFile() && writerOf(entry.name)) candidates.push(join(root, entry.name));
    if (!entry.isDirectory() || options.skip.includes(entry.name)) continue;
    const inside = await readdir(join(root, entry.name), { recursive: true, withFileTypes: true }).catch(
      ifMissing([]),
    );
    for (const found of inside) {
      if (found.isFile() && writerOf(found.name)) candidates.push(join(found.parentPath, found.name));
    }
  }
  const left: string[] = [];
  for (const path of candidates) {
    const writer = writerOf(basename(path)) as Writer;
    // Renamed into place since the listing: not left behind.
    const modifiedAt = (await lstat(path).catch(ifMissing(null)))?.mtimeMs;
    if (modifiedAt !== undefined && leftBehind(writer, modifiedAt, options.cutoff)) left.push(path);
  }
  return left;
}

function ifMissing<T>(fallback: T): (error: unknown) => T {
  return (error) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return fallback;
    throw error;
  };
}
