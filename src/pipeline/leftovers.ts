/**
 * What a killed run (SIGKILL: an OOM kill, a cancelled runner) leaves, cleared by every run
 * that follows, the ones that find nothing new included: its scratch folder in $TMPDIR
 * (listing spills and media bodies, respondents' text), its temporary run folder (or, on object
 * storage, its staged objects and unfinished uploads), its lock or lease, and on a file system
 * the files it was writing under temporary names (a part being copied into current/).
 *
 * A run that writes clears them as it starts (openScratch, openPipelineDirectory). A run with
 * nothing new takes no lease for itself, so it looks first, reading only: when its shard's lock
 * is held by a live run, everything is that run's and nothing is touched; when the lock was left
 * by a dead run, or a killed run's folder or temporary file is there, it takes the lease for the
 * moment it clears them (which takes a dead run's lock over), then releases it. Scratch folders
 * and temporary files carry their writer's pid, so those of live runs are never touched.
 */
import { ConfigError } from '../errors.ts';
import { RUNS_DIR, shardNames } from '../output/layout.ts';
import { leftoverOptions, openPipelineDirectory } from '../publish/run-dir.ts';
import type { Warning } from '../records.ts';
import type { Shard } from '../shard.ts';
import type { Storage } from '../storage/types.ts';
import { removeOrphans } from '../util/scratch.ts';
import { describeSystemError } from '../util/system-errors.ts';

export async function clearKilledRuns(
  storage: Storage,
  options: { shard?: Shard | undefined; leftoverGraceMs?: number | undefined },
): Promise<void> {
  await removeOrphans();
  const lease = await storage.leaseState(shardNames(options.shard).lock);
  if (lease.held === 'live') return;
  const left = lease.held === 'dead' || (await storage.hasLeftovers(RUNS_DIR, leftoverOptions(options)));
  if (!left) return;
  const directory = await openPipelineDirectory(storage, options).catch((error: unknown) => {
    // A run took the lease meanwhile: what is left is its to clear.
    if (error instanceof ConfigError) return null;
    throw error;
  });
  await directory?.release();
}

/** Said when they could not be cleared: the run itself is not the worse for it. */
export function leftoversWarning(error: unknown): Warning {
  const described = describeSystemError(error);
  const reason = described instanceof Error ? described.message : String(described);
  return {
    code: 'leftovers_not_cleared',
    message: `what a killed run left could not be cleared (the next run tries again): ${reason}`,
  };
}
