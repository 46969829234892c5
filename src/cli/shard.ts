/**
 * Which shard a run takes, from the command line or the environment a scheduler sets:
 *
 *   --shard K/N                         1-based, e.g. --shard 2/3
 *   STUDY_EXPORT_SHARD=K/N              the same, for a CI matrix (e.g. "${{ matrix.shard }}/3")
 *   JOB_COMPLETION_INDEX=I              a Kubernetes Indexed Job's pod index, 0-based (I = K - 1),
 *     with --shard-count N or STUDY_EXPORT_SHARD_COUNT=N (the Job's completions)
 *
 * The first one given wins, in that order. A count without an index, or an Indexed Job
 * index without a count, is a usage error: a run must never guess which studies it owns.
 */
import { checkShard, parseShard, type Shard } from '../shard.ts';
import { UsageError } from './usage.ts';

export const SHARD_ENV = 'STUDY_EXPORT_SHARD';
export const SHARD_COUNT_ENV = 'STUDY_EXPORT_SHARD_COUNT';
export const JOB_INDEX_ENV = 'JOB_COMPLETION_INDEX';

export interface ShardArgs {
  shard?: string;
  'shard-count'?: number;
}

export function shardOf(args: ShardArgs, env: NodeJS.ProcessEnv): Shard | undefined {
  const given = (name: string) => {
    const value = env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };
  try {
    if (args.shard !== undefined) return parseShard(args.shard);
    const fromEnv = given(SHARD_ENV);
    if (fromEnv !== undefined) return parseShard(fromEnv, SHARD_ENV);
    const jobIndex = given(JOB_INDEX_ENV);
    const countText =
      args['shard-count'] !== undefined ? String(args['shard-count']) : given(SHARD_COUNT_ENV);
    if (jobIndex === undefined) {
      if (countText !== undefined) {
        throw new Error(
          `a shard count (${countText}) is set but no shard: give --shard K/N, ${SHARD_ENV}=K/N or ${JOB_INDEX_ENV}`,
        );
      }
      return undefined;
    }
    if (countText === undefined) {
      throw new Error(
        `${JOB_INDEX_ENV}=${jobIndex} is set (a Kubernetes Indexed Job) but not the number of shards: set --shard-count N or ${SHARD_COUNT_ENV}=N (the Job's completions)`,
      );
    }
    return fromJobIndex(jobIndex, countText);
  } catch (error) {
    throw new UsageError((error as Error).message, 'run');
  }
}

function fromJobIndex(indexText: string, countText: string): Shard {
  if (!/^\d+$/.test(indexText)) {
    throw new Error(`${JOB_INDEX_ENV}: expected a 0-based pod index, found "${indexText}"`);
  }
  if (!/^\d+$/.test(countText)) {
    throw new Error(`${SHARD_COUNT_ENV} / --shard-count: expected a number of shards, found "${countText}"`);
  }
  const count = Number(countText);
  const index = Number(indexText) + 1;
  return checkShard({ index, count }, `${JOB_INDEX_ENV} (0-based) of ${count}`, indexText);
}
