/**
 * The watermark rule. A study's watermark is the run's start time minus WATERMARK_LAG_MS,
 * recorded only after the run is committed and only for studies that finished without
 * loss, the start time read on the earlier of two clocks: this machine's and the service's
 * (its Date header, src/api/client.ts ServiceClock). The service compares updated_since with
 * its own updated_at, so a service clock behind this machine's would otherwise put the
 * watermark after responses it stamps once the run is over, and they would never be listed;
 * a service clock ahead changes nothing (this machine's start is the earlier). The next run
 * lists that study with updated_since = watermark. Why this and not "the newest updated_at
 * seen":
 * - list items may lack updated_at (the spec's sample omits it), so "newest seen" can be
 *   unknowable, while the service still filters on its own updated_at;
 * - a response updated while the run pages through the list has updated_at after the run
 *   started, so the next run fetches it again;
 * - the lag absorbs what the Date header cannot tell (its one-second resolution, a service
 *   whose updated_at is stamped a little before it is visible).
 * The price is that responses updated in the lag window before a run are exported again
 * by the next run; rows are keyed by response_id, so the later run's copy supersedes.
 * The state itself is kept by src/publish/state.ts.
 */
import type { State, StudyState } from '../publish/state.ts';
import type { Warning } from '../records.ts';
import { type Instant as At, compareInstants, parseTimestamp, toIsoUtc } from '../util/timestamp.ts';

export const WATERMARK_LAG_MS = 15 * 60 * 1000;

/** Where the study's archived recordings end (see StudyState.media_watermark). */
function mediaWatermark(previous: StudyState | undefined): string | null {
  if (previous === undefined) return null;
  return previous.media_watermark === undefined ? previous.watermark : previous.media_watermark;
}

/**
 * Where an incremental study starts: --since wins, --full or incremental:false mean none.
 * With media on, it starts where its archived recordings end when that is earlier: the
 * responses whose recordings a run without media skipped are listed again, and their
 * recordings fetched through fresh detail calls (fresh signed links).
 */
export function effectiveSince(
  previous: StudyState | undefined,
  options: { since?: string; full?: boolean; incremental: boolean; media: boolean },
): string | null {
  // Zone-less, it is UTC (as the service reads it), whatever this machine's zone.
  if (options.since) return toIsoUtc(options.since);
  if (options.full || !options.incremental) return null;
  const watermark = previous?.watermark ?? null;
  if (!options.media || watermark === null) return watermark;
  const media = mediaWatermark(previous);
  return media === null || earlier(media, watermark) ? media : watermark;
}

/**
 * The state after a committed run. A study moves only when it finished without loss, and
 * only when this run covered everything since its previous watermark (a --since later
 * than the stored watermark would otherwise skip the gap).
 */
export function advanceState(
  state: State,
  finished: { study_id: string; link_id: string; since: string | null; lossless: boolean }[],
  run: {
    id: string;
    startedAt: number;
    media: boolean;
    /** The service's clock minus this machine's (ServiceClock); null or absent when unknown. */
    serviceSkewMs?: number | null;
    /** Studies the run reconciled (reconcile.ts); a full export of a study reconciles it too. */
    reconciled?: ReadonlySet<string>;
  },
): State {
  const next: State = { version: 1, studies: { ...state.studies } };
  const behind = Math.min(0, run.serviceSkewMs ?? 0);
  const watermark = new Date(run.startedAt + behind - WATERMARK_LAG_MS).toISOString();
  for (const study of finished) {
    const previous = state.studies[study.study_id];
    if (!study.lossless || !coversGap(study.since, previous?.watermark ?? null)) continue;
    // Recordings are archived up to the new watermark only by a run with media that covered
    // everything since they were last archived; otherwise they stay owed.
    const archived = run.media && coversGap(study.since, mediaWatermark(previous));
    const reconciled = study.since === null || run.reconciled?.has(study.study_id) === true;
    const reconciledAt = reconciled ? new Date(run.startedAt).toISOString() : previous?.reconciled_at;
    next.studies[study.study_id] = {
      link_id: study.link_id,
      watermark,
      media_watermark: archived ? watermark : mediaWatermark(previous),
      last_run: run.id,
      last_run_at: new Date(run.startedAt).toISOString(),
      ...(reconciledAt === undefined ? {} : { reconciled_at: reconciledAt }),
    };
  }
  return next;
}

/** The entries of the studies whose state a run changes. */
export function changedEntries(before: State, after: State): Record<string, StudyState> {
  const entries: Record<string, StudyState> = {};
  for (const [id, entry] of Object.entries(after.studies)) {
    if (JSON.stringify(before.studies[id]) !== JSON.stringify(entry)) entries[id] = entry;
  }
  return entries;
}

/**
 * A warning when the service's clock (its Date header) and this machine's differ by more than
 * the watermark's margin. The watermark is taken on the earlier of the two (advanceState), so
 * nothing is missed either way; the warning says which clock is off.
 */
export function clockSkewWarning(skewMs: number | null): Warning | null {
  if (skewMs === null || Math.abs(skewMs) <= WATERMARK_LAG_MS) return null;
  const minutes = Math.round(Math.abs(skewMs) / 60_000);
  const margin = Math.round(WATERMARK_LAG_MS / 60_000);
  const message =
    skewMs < 0
      ? `the service's clock is ${minutes} minutes behind this machine's (its Date header), beyond the ${margin}-minute margin: watermarks follow the service's clock, so what it stamps after this run is still listed by the next one. Check both clocks`
      : `the service's clock is ${minutes} minutes ahead of this machine's (its Date header), beyond the ${margin}-minute margin: watermarks follow this machine's clock, the earlier one, so nothing is missed, but the next run lists more again. Check both clocks`;
  return { code: 'service_clock_skew', message };
}

/** A listing from `since` covers everything after `mark` (null: from the beginning). */
function coversGap(since: string | null, mark: string | null): boolean {
  return since === null || (mark !== null && !earlier(mark, since));
}

/** `a` names an instant before `b` (ISO text of any precision, so not compared as strings). */
function earlier(a: string, b: string): boolean {
  return compareInstants(parseTimestamp(a) as At, parseTimestamp(b) as At) < 0;
}
