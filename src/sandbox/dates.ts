/**
 * When the sandbox's generated data happens: each study's created_at, the spacing of its
 * responses, and timestamps as the service writes them.
 */

export const DAY_MS = 86_400_000;
/** Data set timestamps start here, whatever the clock says, so payloads stay deterministic. */
const EPOCH_MS = Date.UTC(2025, 2, 3, 9, 0, 0);
/** Time between two generated studies while the data set fits before the clock. */
const STUDY_STEP_MS = 3 * DAY_MS + 3_600_000;

/** Time between two generated responses of a study: about 30 days for all of them. */
export function responseSpacing(responses: number): number {
  return Math.max(60_000, Math.floor((30 * DAY_MS) / Math.max(1, responses)));
}

/**
 * The latest a generated response's updated_at can be after its study's created_at: the last
 * response an hour plus its spacing later, 40 minutes of work, a re-run up to 21 days later
 * (generateStudy's bounds, rounded up).
 */
function studyTailMs(responses: number): number {
  return 3_600_000 + responses * responseSpacing(responses) + 41 * 60_000 + 21 * DAY_MS;
}

/**
 * Generated study i is created at `start + i * step`: from EPOCH_MS every STUDY_STEP_MS while
 * the whole data set (its last study's responses included) still ends before `nowMs`, the
 * clock when the sandbox starts; beyond that the studies move closer together, and if even
 * that does not fit, the data set starts earlier. Nothing is ever dated after the clock, and
 * the dates depend only on the options and the starting clock.
 */
export function studyDates(
  options: { studies: number; responses: number },
  nowMs: number,
): { start: number; step: number } {
  const latest = nowMs - studyTailMs(options.responses);
  const gaps = Math.max(1, options.studies - 1);
  if (EPOCH_MS + gaps * STUDY_STEP_MS <= latest) return { start: EPOCH_MS, step: STUDY_STEP_MS };
  const step = Math.max(60_000, Math.floor((latest - EPOCH_MS) / gaps));
  return { start: Math.min(EPOCH_MS, latest - gaps * step), step };
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** An ISO 8601 timestamp of `ms` shown in the given UTC offset, e.g. 2025-03-03T11:00:00.000+02:00. */
export function isoWithOffset(ms: number, offset: string): string {
  const sign = offset.startsWith('-') ? -1 : 1;
  const [hours = 0, minutes = 0] = offset.slice(1).split(':').map(Number);
  const shifted = new Date(ms + sign * (hours * 60 + minutes) * 60_000).toISOString();
  return `${shifted.slice(0, -1)}${offset}`;
}
