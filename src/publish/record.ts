/**
 * The record a run writes before it publishes anything, .pending/<run id>.json: its studies,
 * whose current/ parts it is about to publish, and the state entries it will write. It stays
 * until the run's publication is complete, so the next run of the shard finds what a run
 * stopped part way left, and finishes or undoes it (commit.ts).
 */
import { z } from 'zod';
import { RunError } from '../errors.ts';
import { ownRun, PENDING_DIR, pendingPath, pendingRunId, shardNames } from '../output/layout.ts';
import { compareRunIds } from '../run-id.ts';
import type { Shard } from '../shard.ts';
import type { Storage } from '../storage/types.ts';
import { StudyState } from './state.ts';

const PendingRecord = z.object({
  version: z.literal(1),
  run_id: z.string(),
  /** The studies whose parts the run publishes; wide: their wide sheet comes in after the commit. */
  studies: z.array(z.object({ study_id: z.string(), wide: z.boolean() })),
  /** The state entries the run writes once committed; null when it moves none (a replay). */
  state: z.record(z.string(), StudyState).nullable(),
});
export type PendingRecord = z.infer<typeof PendingRecord>;

export async function writePending(storage: Storage, record: PendingRecord): Promise<void> {
  await storage.put(pendingPath(record.run_id), `${JSON.stringify(record, null, 2)}\n`);
}

/**
 * The runs of the shard (or of the unsharded pipeline; with `allShards`, of any) that left a
 * record, oldest first.
 */
export async function pendingRuns(
  storage: Storage,
  shard: Shard | undefined,
  options: { allShards?: boolean } = {},
): Promise<string[]> {
  const suffix = shardNames(shard).runSuffix;
  const runIds: string[] = [];
  for await (const file of storage.list(PENDING_DIR)) {
    const runId = pendingRunId(file.path);
    if (runId !== null && (options.allShards || ownRun(runId, suffix))) runIds.push(runId);
  }
  return runIds.sort(compareRunIds);
}

export async function readRecord(storage: Storage, runId: string): Promise<PendingRecord> {
  const path = pendingPath(runId);
  const bytes = await storage.read(path);
  let parsed: unknown = null;
  try {
    parsed = bytes === null ? null : JSON.parse(bytes.toString('utf8'));
  } catch {}
  const result = PendingRecord.safeParse(parsed);
  if (!result.success) {
    throw new RunError(
      `${storage.describe(path)}: the record of what run ${runId} left unfinished cannot be read; move it away, and run with --full once to rebuild current/`,
      { context: { file: storage.describe(path) } },
    );
  }
  return result.data;
}
