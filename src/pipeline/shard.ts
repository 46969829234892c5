/**
 * Sharding: shard K of N takes the studies whose bucket (src/buckets.ts: SHA-256 of the
 * permanent id, modulo 64) is K - 1 modulo N: the same on every machine and every Node
 * version, and independent of the order in which the service lists studies. Permanent ids
 * never change, so a study stays in its shard across renames, and each shard owns its
 * studies' state and whole buckets of current/: N shards can run at once without a lock
 * between them.
 */
import { BUCKETS, bucketOf } from '../buckets.ts';

export interface Shard {
  /** 1-based: shard 1 of 3 is the first. */
  index: number;
  count: number;
}

/** The largest shard count accepted: one bucket of current/ each; more would leave shards idle. */
export const MAX_SHARDS = BUCKETS;

/** "K/N" with 1 <= K <= N; throws a message naming what was wrong. */
export function parseShard(text: string, what = '--shard'): Shard {
  const match = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(text);
  const index = Number(match?.[1]);
  const count = Number(match?.[2]);
  if (!match || !Number.isSafeInteger(index) || !Number.isSafeInteger(count)) {
    throw new Error(`${what}: expected K/N, e.g. 2/3 for the second of three shards, found "${text}"`);
  }
  return checkShard({ index, count }, what, text);
}

export function checkShard(shard: Shard, what: string, found: string): Shard {
  if (shard.count < 1 || shard.count > MAX_SHARDS) {
    throw new Error(`${what}: the number of shards must be from 1 to ${MAX_SHARDS}, found "${found}"`);
  }
  if (shard.index < 1 || shard.index > shard.count) {
    throw new Error(`${what}: shard numbers run from 1 to ${shard.count} (1-based), found "${found}"`);
  }
  return shard;
}

/** The shard (1-based) that a permanent study id belongs to among `count`. */
export function shardOfStudy(studyId: string, count: number): number {
  return shardOfBucket(bucketOf(studyId), count);
}

/** The shard (1-based) that owns a bucket of current/ among `count`. */
export function shardOfBucket(bucket: number, count: number): number {
  return (bucket % count) + 1;
}

export function inShard(studyId: string, shard: Shard | undefined): boolean {
  return shard === undefined || shardOfStudy(studyId, shard.count) === shard.index;
}

/** "shard-2-of-3": the suffix of a shard's run ids, lock and latest pointer. */
export function shardLabel(shard: Shard): string {
  return `shard-${shard.index}-of-${shard.count}`;
}
