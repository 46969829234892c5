/**
 * When a run writes no run folder. A night with nothing new on the service should not add
 * an empty run and move `latest` to it: `latest` would then name a run holding none of the
 * data, and the runs folder would fill with empty runs. So a run is committed only when it
 * exported something or has something to report; otherwise it is discarded before its
 * commit and the state is left as it is (a watermark that does not move only makes the next
 * listing start a little earlier: nothing is skipped).
 *
 * A run is always written when it is a first run (nothing in `latest`), a full export of any
 * study (--full, incremental: false, a study seen for the first time, recordings owed from
 * the beginning), a replay, or when anything at all was fetched, rejected, archived, failed
 * or warned about (warnings are kept in the manifest), or a study is seen under a new link_id.
 */
import type { StudyOutcome } from '../load/manifest.ts';
import type { State } from './state.ts';

export interface RunFindings {
  outcomes: StudyOutcome[];
  /** The state the run started from. */
  state: State;
  /** Rejects of the whole run, the study list's included. */
  rejects: number;
  warnings: number;
  /** Entries written to media.zip. */
  mediaArchived: number;
}

export function foundNothingNew(findings: RunFindings): boolean {
  if (findings.rejects > 0 || findings.warnings > 0 || findings.mediaArchived > 0) return false;
  return findings.outcomes.every((outcome) => studyUnchanged(outcome, findings.state));
}

function studyUnchanged(outcome: StudyOutcome, state: State): boolean {
  const known = state.studies[outcome.study_id];
  return (
    known !== undefined &&
    known.link_id === outcome.link_id &&
    // A full listing may drop deleted responses from current/: always committed.
    outcome.since !== null &&
    outcome.responses === 0 &&
    outcome.rejects === 0 &&
    outcome.media_failed === 0 &&
    outcome.lossless
  );
}

/** Every API request the run made (each attempt), from the client's counters. */
export function requestCount(requests: Record<string, Record<string, number>>): number {
  let total = 0;
  for (const byOutcome of Object.values(requests)) for (const n of Object.values(byOutcome)) total += n;
  return total;
}
