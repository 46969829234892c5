/**
 * erasures/: what each erasure did, one JSON object per erasure, and, while one is under way,
 * its plan in erasures/.pending/<erasure id>.json, which the next `erase` finishes before
 * anything else. Neither holds an id in plain or any content: a response is named by the
 * SHA-256 of its id (`responseRef`), so a controller asked "was X erased?" hashes X and looks,
 * and no byte of the output names X once it is gone.
 */
import { responseRef } from '../ledger/index.ts';
import type { Storage } from '../storage/types.ts';

export { responseRef };

export const ERASURES_DIR = 'erasures';
const PENDING_DIR = `${ERASURES_DIR}/.pending`;

/** A run an erasure rewrites, and what its plan found there before anything changed. */
export interface PlannedRun {
  run_id: string;
  /** Erased responses in the run, by study. */
  responses_by_study: Record<string, number>;
}

/** The plan of an erasure under way: the responses (their ids, kept only until it is done). */
export interface PendingErasure {
  id: string;
  started_at: string;
  ids: string[];
  runs: PlannedRun[];
  /** Studies current/ holds the responses under. */
  current_studies: string[];
}

export interface RunCounts {
  run_id: string;
  responses: number;
  rows: number;
  recordings: number;
}

/** What erasures/<id>.json says once the erasure is done. */
export interface ErasureRecord {
  id: string;
  started_at: string;
  finished_at: string;
  /** How the responses were chosen: by id, or by attribute (the key only). */
  chosen_by: 'response' | 'attribute';
  responses: { ref: string }[];
  runs: RunCounts[];
  current: { studies: number };
  /** Packages (handoffs/) that held an erased response when it was erased. */
  handoffs: string[];
}

export function pendingPath(id: string): string {
  return `${PENDING_DIR}/${id}.json`;
}

export async function writePendingErasure(storage: Storage, pending: PendingErasure): Promise<void> {
  await storage.put(pendingPath(pending.id), `${JSON.stringify(pending, null, 2)}\n`);
}

export async function pendingErasures(storage: Storage): Promise<PendingErasure[]> {
  const found: PendingErasure[] = [];
  for await (const file of storage.list(PENDING_DIR)) {
    if (!file.path.endsWith('.json') || file.path.includes('/')) continue;
    const text = await storage.read(`${PENDING_DIR}/${file.path}`);
    if (text !== null) found.push(JSON.parse(text.toString('utf8')) as PendingErasure);
  }
  return found.sort((a, b) => a.id.localeCompare(b.id));
}

export async function removePendingErasure(storage: Storage, id: string): Promise<void> {
  await storage.delete(pendingPath(id));
}

export async function writeErasureRecord(storage: Storage, record: ErasureRecord): Promise<string> {
  const path = `${ERASURES_DIR}/${record.id}.json`;
  await storage.put(path, `${JSON.stringify(record, null, 2)}\n`);
  return path;
}

/** Every erasure recorded, oldest first. */
export async function erasureRecords(storage: Storage): Promise<ErasureRecord[]> {
  const found: ErasureRecord[] = [];
  for await (const file of storage.list(ERASURES_DIR)) {
    if (!file.path.endsWith('.json') || file.path.includes('/')) continue;
    const text = await storage.read(`${ERASURES_DIR}/${file.path}`);
    if (text !== null) found.push(JSON.parse(text.toString('utf8')) as ErasureRecord);
  }
  return found.sort((a, b) => a.id.localeCompare(b.id));
}
