/**
 * Who holds a pipeline's lock or lease, said the same way for a folder and a bucket, and the
 * refusal a run (or `describe`, `erase`) meets while it is held: exit 75, try again later.
 */
import { BusyError } from '../errors.ts';

export interface LeaseHolder {
  pid: number;
  /** The machine it runs on; null in a lock written before the machine was recorded. */
  host: string | null;
  /** When it took the lock (ISO 8601); null when unknown. */
  since: string | null;
}

/** "process 4242 on build-7 since 2026-11-28T02:30:01.000Z". */
export function holderText(holder: LeaseHolder): string {
  const host = holder.host ? ` on ${holder.host}` : '';
  const since = holder.since ? ` since ${holder.since}` : '';
  return `process ${holder.pid}${host}${since}`;
}

/** Another run holds `where`: said as one line naming the holder, exit 75. */
export function outputBusy(where: string, by: string, remedy = 'try again once it has finished'): BusyError {
  return new BusyError(`another run of this pipeline is in progress (${by} holds ${where}); ${remedy}`, {
    context: { file: where },
  });
}
