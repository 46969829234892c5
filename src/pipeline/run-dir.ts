/**
 * The run directory's life: a run is written under runs/.tmp-<run id>, renamed to
 * runs/<run id> only when complete, and `latest` is rewritten after that. A lock file keeps
 * two runs of one pipeline from writing the same state at once.
 *
 * Shard K of N owns its own objects: run ids end in -shard-K-of-N, its lock is
 * .lock-shard-K-of-N and its pointer latest-shard-K-of-N, and it clears only its own
 * leftovers. So N shards run at once without waiting for each other, and none of them
 * writes an object another one writes.
 *
 * A process that exits before it is done (Ctrl-C, a CI cancel, an uncaught error) removes
 * its uncommitted run folder and its lock on the way out. Only SIGKILL leaves them, and
 * the next run clears those.
 */
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../errors.ts';
import { isProcessAlive, removeIfExitingFirst } from '../util/exit-cleanup.ts';
import { makeDirectory, writeFileAtomic } from '../util/fs.ts';
import { type Shard, shardLabel } from './shard.ts';

const TEMP_PREFIX = '.tmp-';

/** Run ids are UTC times, e.g. 20261121T235500Z. */
export function runIdAt(time: number): string {
  return new Date(time)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
}

export interface RunDirectory {
  id: string;
  /** Where files are written while the run is in progress. */
  tempPath: string;
  /** Where the run lands when committed. */
  finalPath: string;
  commit(): Promise<void>;
  discard(): Promise<void>;
}

export interface PipelineDirectory {
  root: string;
  runsDir: string;
  /** Start a run: a fresh, hidden temp directory with a unique run id. */
  createRun(startedAt: number): Promise<RunDirectory>;
  release(): Promise<void>;
}

/** What one shard (or the unsharded pipeline) names its own: lock, latest pointer, run id suffix. */
export interface ShardNames {
  lock: string;
  latest: string;
  /** '' unsharded, '-shard-2-of-3' for shard 2 of 3. */
  runSuffix: string;
}

export function shardNames(shard: Shard | undefined): ShardNames {
  if (!shard) return { lock: '.lock', latest: 'latest', runSuffix: '' };
  const label = shardLabel(shard);
  return { lock: `.lock-${label}`, latest: `latest-${label}`, runSuffix: `-${label}` };
}

/** Take the pipeline's (or the shard's) lock and clear what its killed runs left behind. */
export async function openPipelineDirectory(root: string, shard?: Shard): Promise<PipelineDirectory> {
  const names = shardNames(shard);
  const runsDir = join(root, 'runs');
  await makeDirectory(runsDir);
  const lockPath = join(root, names.lock);
  await acquireLock(lockPath);
  const forgetLock = removeIfExitingFirst(lockPath);
  await removeStaleTempRuns(runsDir, names.runSuffix);
  return {
    root,
    runsDir,
    createRun: (startedAt) => createRun(root, runsDir, startedAt, names),
    async release() {
      forgetLock();
      await rm(lockPath, { force: true });
    },
  };
}

async function acquireLock(lockPath: string): Promise<void> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(lockPath, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number.parseInt(await readFile(lockPath, 'utf8').catch(() => ''), 10);
      if (Number.isInteger(holder) && holder !== process.pid && isProcessAlive(holder)) {
        throw new ConfigError(
          `another run of this pipeline is in progress (process ${holder} holds ${lockPath}); wait for it or stop it`,
          { context: { file: lockPath } },
        );
      }
      // The holder died (killed mid-run): its lock is stale.
      await rm(lockPath, { force: true });
    }
  }
  throw new ConfigError(`could not take the lock ${lockPath}`, { context: { file: lockPath } });
}

/**
 * Runs that were killed leave a temp directory; under its lock nobody else owns one of this
 * shard's. Other shards' temp runs may be in progress: they are theirs to clear.
 */
async function removeStaleTempRuns(runsDir: string, runSuffix: string): Promise<void> {
  for (const name of await readdir(runsDir)) {
    if (name.startsWith(TEMP_PREFIX) && ownRun(name, runSuffix)) {
      await rm(join(runsDir, name), { recursive: true, force: true });
    }
  }
}

/** Run ids: <time>[-n][-shard-K-of-N]. */
function ownRun(name: string, runSuffix: string): boolean {
  const sharded = /-shard-\d+-of-\d+$/.test(name);
  return runSuffix === '' ? !sharded : name.endsWith(runSuffix);
}

async function createRun(
  root: string,
  runsDir: string,
  startedAt: number,
  names: ShardNames,
): Promise<RunDirectory> {
  const time = runIdAt(startedAt);
  let id = `${time}${names.runSuffix}`;
  // Two runs within one second get distinct ids.
  for (let n = 2; await exists(join(runsDir, id)); n++) id = `${time}-${n}${names.runSuffix}`;
  const tempPath = join(runsDir, `${TEMP_PREFIX}${id}`);
  const finalPath = join(runsDir, id);
  const forgetTemp = removeIfExitingFirst(tempPath);
  await mkdir(tempPath, { recursive: true });
  return {
    id,
    tempPath,
    finalPath,
    async commit() {
      await rename(tempPath, finalPath);
      forgetTemp();
      await writeFileAtomic(join(root, names.latest), `${id}\n`);
    },
    async discard() {
      forgetTemp();
      await rm(tempPath, { recursive: true, force: true });
    },
  };
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
