/**
 * How one run changes from before to after, like a run's commit (docs/erasure.md):
 *
 * - In a folder: the whole new run is written beside it as runs/.erase-<erasure>-<run>/
 *   (files that hold no response hard-linked), manifest.json last; then two renames switch it:
 *   the run aside (runs/.erased-<erasure>-<run>), the new one in its place; then the old one
 *   goes. A kill before the switch leaves the run as it was and a staged folder that the
 *   next `erase` removes and writes again; a kill between the two renames leaves the new run
 *   complete under its staged name, where readers find it (output/manifest.ts `runFolder`)
 *   until the next `erase` renames it into place; a kill after them leaves the old run aside,
 *   removed next.
 * - On object storage, which has no rename: the changed files are written in local scratch,
 *   then uploaded over the run's objects one by one (each object appears whole), manifest.json
 *   last. A kill during the uploads leaves a run whose files are partly new and whose manifest
 *   is the old one, which `verify` reports, until the next `erase` reads that run again (each
 *   file's filter is the same on a file already filtered) and finishes it.
 */
import { copyFile, link, mkdtemp, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { HashingThread } from '../media/hashing-thread.ts';
import { erasedRunName, erasingRunName, MANIFEST_FILE, RUNS_DIR, runPath } from '../output/layout.ts';
import { type Manifest, readManifest } from '../output/manifest.ts';
import { isObjectStorage } from '../storage/index.ts';
import { LocalStorage } from '../storage/local.ts';
import type { Storage } from '../storage/types.ts';
import { makeDirectory } from '../util/fs.ts';
import { killPoint } from '../util/kill-point.ts';
import { type ErasedManifest, type RunErased, rewriteRun } from './run-files.ts';

const STAGED_MARK = '.staged';

/** Whether the erasure `erasureId` is already in this manifest (the run is after). */
export function erasedBy(manifest: Manifest, erasureId: string): boolean {
  return ((manifest as ErasedManifest).erasures ?? []).some((erasure) => erasure.id === erasureId);
}

export interface RunSwitchInput {
  storage: Storage;
  runId: string;
  ids: ReadonlySet<string>;
  erasure: { id: string; at: string };
  /** What the plan found in the run: erased responses by study. */
  planned: Readonly<Record<string, number>>;
  /** The erasure's scratch folder (src/util/scratch.ts): local files on their way to a bucket. */
  scratchDir: string;
  /** Where media.zip's SHA-256 is computed (another core). */
  hashing?: HashingThread;
}

/** Erases `ids` from the run, whole or not at all; null when the run was already after. */
export async function eraseRun(input: RunSwitchInput): Promise<RunErased | null> {
  // A scratch folder of the run's own: runs erased at once spill studies of the same names.
  const scratchDir = await mkdtemp(join(input.scratchDir, 'run-'));
  try {
    const own = { ...input, scratchDir };
    return await (isObjectStorage(input.storage.location) ? eraseObjectRun(own) : eraseFolderRun(own));
  } finally {
    await rm(scratchDir, { recursive: true, force: true });
  }
}

async function eraseFolderRun(input: RunSwitchInput): Promise<RunErased | null> {
  const { storage, runId, erasure } = input;
  const run = runPath(runId);
  const staged = `${RUNS_DIR}/${erasingRunName(erasure.id, runId)}`;
  const aside = `${RUNS_DIR}/${erasedRunName(erasure.id, runId)}`;
  const stagedManifest = await readManifest(storage.at(staged));
  const current = await readManifest(storage.at(run));
  if (current === null && stagedManifest !== null && erasedBy(stagedManifest, erasure.id)) {
    // Killed between the two renames: the new run is whole under its staged name.
    await moveFolder(storage, staged, run);
    await storage.deleteAll(aside);
    return null;
  }
  if (current === null) return null;
  if (erasedBy(current, erasure.id)) {
    await storage.deleteAll(aside);
    await storage.deleteAll(staged);
    return null;
  }
  await storage.deleteAll(staged);
  // The staged folder made by its first file (a storage makes folders inside itself, not its root).
  await storage.put(`${staged}/${STAGED_MARK}`, '');
  await storage.delete(`${staged}/${STAGED_MARK}`);
  const erased = await rewriteRun({
    from: storage.at(run),
    to: storage.at(staged),
    manifest: current,
    ids: input.ids,
    erasure,
    planned: input.planned,
    scratchDir: input.scratchDir,
    ...(input.hashing ? { hashing: input.hashing } : {}),
    keepUnchanged: (path) =>
      linkOrCopy(storage.describe(`${run}/${path}`), storage.describe(`${staged}/${path}`)),
  });
  killPoint('erase-run-staged');
  await moveFolder(storage, run, aside);
  killPoint('erase-run-aside');
  await moveFolder(storage, staged, run);
  killPoint('erase-run-switched');
  await storage.deleteAll(aside);
  return erased;
}

/**
 * A file the erasure leaves unchanged, in the staged run: a hard link (no byte copied; a run's
 * files are never written in place, so the two names never differ), a copy where the file
 * system has no links.
 */
async function linkOrCopy(from: string, to: string): Promise<void> {
  try {
    await link(from, to);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      await makeDirectory(dirname(to));
      return linkOrCopy(from, to);
    }
    if (code !== 'EPERM' && code !== 'EXDEV' && code !== 'ENOTSUP' && code !== 'EMLINK') throw error;
    await copyFile(from, to);
  }
}

/** A folder of the output renamed within it (the storage's move of a folder in). */
async function moveFolder(storage: Storage, from: string, to: string): Promise<void> {
  if (!(await storage.moveFolderIn(storage.describe(from), to)))
    throw new Error(`${storage.describe(to)} is already there; cannot move ${storage.describe(from)} to it`);
}

async function eraseObjectRun(input: RunSwitchInput): Promise<RunErased | null> {
  const { storage, runId, erasure } = input;
  const run = storage.at(runPath(runId));
  const current = await readManifest(run);
  if (current === null || erasedBy(current, erasure.id)) return null;
  const scratch = await mkdtemp(join(input.scratchDir, 'run-'));
  try {
    const local = new LocalStorage(scratch, { unseen: true });
    const erased = await rewriteRun({
      from: run,
      to: local,
      manifest: current,
      ids: input.ids,
      erasure,
      planned: input.planned,
      scratchDir: input.scratchDir,
      ...(input.hashing ? { hashing: input.hashing } : {}),
    });
    killPoint('erase-run-staged');
    for (const path of erased.written) {
      if (path === MANIFEST_FILE) continue;
      await run.moveIn(join(scratch, path), path);
      killPoint('erase-run-uploading');
    }
    await run.moveIn(join(scratch, MANIFEST_FILE), MANIFEST_FILE);
    killPoint('erase-run-switched');
    return erased;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
