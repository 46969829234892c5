/**
 * The run's scratch folder: one folder in the OS temp directory (TMPDIR) per run, holding
 * every temporary file the run makes outside its output (listing spills, media bodies on
 * their way into media.zip). It is local whatever the output is, removed when the run ends
 * by any path but SIGKILL, and the folders of killed runs are removed by the next run: the
 * owner's pid is in the name, as it is in the pipeline's lock.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isProcessAlive, removeIfExitingFirst } from './exit-cleanup.ts';

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
      await rm(dir, { recursive: true, force: true });
      forget();
    },
  };
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
