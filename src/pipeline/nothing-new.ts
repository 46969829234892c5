/**
 * When a run writes no run folder. A night with nothing new on the service should not add
 * an empty run and move `latest` to it: `latest` would then name a run holding none of the
 * data, and the runs folder would fill with empty runs. So a run is committed only when it
 * exported something or has something to report; otherwise it is discarded before its
 * commit and the state is left as it is (a watermark that does not move only makes the next
 * listing start a little earlier: nothing is skipped).
 *
 * A run is always written when it is a first run (no earlier run in `latest` or the state), a
 * full export of any study (--full, incremental: false, a study seen for the first time,
 * recordings owed from the beginning), a replay, or when anything at all was fetched,
 * rejected, archived, failed or warned about (warnings are kept in the manifest), or a study
 * is seen under a new link_id. Only the state decides, not `latest`: a CI runner that restores
 * nothing but state/ (examples/github-actions.yml) has no `latest`, and its empty nights write
 * nothing either.
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

/**
 * The run nothing is new since: the newest run recorded in the state of the studies checked
 * (else the run `latest` names); null when this run must be written.
 */
export function nothingNewSince(findings: RunFindings, latest: string | null): string | null {
  if (findings.rejects > 0 || findings.warnings > 0 || findings.mediaArchived > 0) return null;
  if (!findings.outcomes.every((outcome) => studyUnchanged(outcome, findings.state))) return null;
  let newest: string | null = null;
  for (const outcome of findings.outcomes) {
    const run = findings.state.studies[outcome.study_id]?.last_run;
    // Run ids start with their UTC time, so they sort as the runs ran.
    if (run !== undefined && (newest === null || run > newest)) newest = run;
  }
  return newest ?? latest;
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
