/**
 * Versions before the run's scratch folder (src/util/scratch.ts) left listing spills as
 * study-export-spill-<random> in the temporary directory, with no owner in the name. Those are
 * removed once nothing in them changed for a day: an old run still alive writes its spill while
 * it lists, and no run lists one study for a day.
 */
import { lstat, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** An older version's listing spill: study-export-spill-<random>, no owner in the name. */
const OLD_SPILL = /^study-export-spill-[A-Za-z0-9]{6}$/;
export const OLD_SPILL_AGE_MS = 24 * 3_600_000;

/** Removes the old spills of `parent` untouched for a day; returns their names. */
export async function removeOldSpills(parent = tmpdir()): Promise<string[]> {
  const removed: string[] = [];
  const names = await readdir(parent).catch(() => [] as string[]);
  for (const name of names) {
    if (!OLD_SPILL.test(name)) continue;
    if (await untouchedSince(join(parent, name), Date.now() - OLD_SPILL_AGE_MS)) {
      await rm(join(parent, name), { recursive: true, force: true });
      removed.push(name);
    }
  }
  return removed;
}

/** A folder (not a link) whose own and whose entries' modification times are all before `cutoff`. */
async function untouchedSince(dir: string, cutoff: number): Promise<boolean> {
  try {
    const own = await lstat(dir);
    if (!own.isDirectory() || own.mtimeMs >= cutoff) return false;
    for (const entry of await readdir(dir)) {
      if ((await lstat(join(dir, entry))).mtimeMs >= cutoff) return false;
    }
    return true;
  } catch {
    return false; // gone meanwhile, or not ours to read: leave it
  }
}
