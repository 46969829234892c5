/**
 * `study-export describe`: current/datapackage.json, README.md and report.html written for all
 * of current/, the step after a night's shards (each shard describes only its own buckets,
 * current/descriptor.ts). It runs alone: should any run of the pipeline hold its lock, it stops
 * and changes nothing. What the files say is as of the runs the pointers name (`latest`,
 * `latest-shard-K-of-N`), recorded in the descriptor's `covers`; parts that a killed run
 * published but never committed are left out of all three (its shard's next run removes them).
 */
import { recordedPipeline } from '../config/recorded.ts';
import { countCurrent, writeCurrentDescriptor, writeCurrentGuide } from '../current/index.ts';
import { RunError } from '../errors.ts';
import {
  CURRENT_DESCRIPTOR,
  CURRENT_DIR,
  parseShardLabel,
  runPath,
  shardLabelOfRun,
  shardNames,
  shardOfCurrentDescriptor,
} from '../output/layout.ts';
import { readRunManifest } from '../output/manifest.ts';
import { compareRunIds } from '../run-id.ts';
import { type Shard, shardLabel } from '../shard.ts';
import { outputBusy } from '../storage/lease-holder.ts';
import type { Storage } from '../storage/types.ts';
import { isCommitted } from './commit.ts';
import { pendingRuns } from './record.ts';

export interface Described {
  /** Where the descriptor is: a file path or an s3:// URL. */
  descriptor: string;
  /** The pointers read and the runs they named. */
  runs: Record<string, string>;
}

export async function describeCurrent(storage: Storage): Promise<Described> {
  const shards = await shardsOf(storage);
  for (const shard of [undefined, ...shards]) {
    const lock = shardNames(shard).lock;
    const state = await storage.leaseState(lock);
    if (state.held === 'live') {
      throw outputBusy(
        storage.describe(lock),
        state.by,
        'describe current/ once every shard has finished (exit 75: try again later)',
      );
    }
  }
  const runs: Record<string, string> = {};
  for (const shard of [undefined, ...shards]) {
    const pointer = shardNames(shard).latest;
    const id = (await storage.read(pointer))?.toString('utf8').trim();
    if (id) runs[pointer] = id;
  }
  const newest = Object.values(runs).sort(compareRunIds).at(-1);
  if (newest === undefined) {
    throw new RunError(
      `${storage.describe('')}: no run committed yet (no latest or latest-shard-K-of-N); nothing to describe`,
    );
  }
  const manifest = await readRunManifest(storage, newest);
  if (manifest === null) {
    throw new RunError(`${storage.describe(runPath(newest))}: no manifest; is this a study-export output?`);
  }
  const config = recordedPipeline(manifest);
  const uncommitted = new Set<string>();
  for (const runId of await pendingRuns(storage, undefined, { allShards: true })) {
    if (!(await isCommitted(storage, shardOfRun(runId), runId))) uncommitted.add(runId);
  }
  // The guide first, so that the descriptor lists it.
  const counted = await countCurrent(storage, undefined, uncommitted);
  await writeCurrentGuide(storage, config, newest, counted, uncommitted);
  await writeCurrentDescriptor({
    store: storage,
    name: config.name,
    formats: config.output.formats,
    baseUrl: config.source.base_url,
    runs,
    uncommitted,
  });
  return { descriptor: storage.describe(CURRENT_DESCRIPTOR), runs };
}

/** The shards that ever wrote here: by their descriptors in current/ and their records. */
async function shardsOf(storage: Storage): Promise<Shard[]> {
  const labels = new Set<string>();
  for await (const file of storage.list(CURRENT_DIR)) {
    const label = shardOfCurrentDescriptor(file.path);
    if (label) labels.add(label);
  }
  for (const runId of await pendingRuns(storage, undefined, { allShards: true })) {
    const shard = shardOfRun(runId);
    if (shard) labels.add(shardLabel(shard));
  }
  return [...labels].sort().flatMap((label) => parseShardLabel(label) ?? []);
}

/** The shard a run id names (…-shard-K-of-N), if any. */
function shardOfRun(runId: string): Shard | undefined {
  return parseShardLabel(shardLabelOfRun(runId) ?? '') ?? undefined;
}
