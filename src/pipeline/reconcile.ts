/**
 * Reconcile: what the service no longer lists leaves current/. An incremental run sees only
 * what changed, never a deletion; so now and then (`run --reconcile`, or a scheduled run once
 * `incremental.reconcile_every` has passed since the study was last reconciled) a run lists
 * each of its incremental studies whole (pages only, no detail requests) and compares the ids
 * with those current/ holds for it. What current/ holds and the service no longer lists leaves
 * current/ in the run's commit (src/current/merge.ts, `removed`) and is recorded in the run's
 * `deletions` table and manifest.
 *
 * Order: current/'s ids are read before the service is listed, so a response created after
 * the listing is never taken for a deleted one; a run that takes the lease after another run
 * committed reconciles again (run.ts), since that run may have added responses after this
 * listing. A listing that is not known whole (a reject without an id, a page that repeated, a
 * list that would not settle, a failed request) removes nothing. A study the service no
 * longer lists is reported, never emptied: a key that lost access to it looks the same.
 *
 * The guard: a listing that would take more than `reconcile_max_fraction` of a study's
 * responses out of current/ (an empty answer from a service in trouble looks like a mass
 * deletion) removes none of them; the run says which study and how many, and exits 3, until a
 * run is given --accept-deletions.
 */
import pLimit from 'p-limit';
import type { ApiClient } from '../api/client.ts';
import type { Study } from '../api/resources.ts';
import { durationMs } from '../config/duration.ts';
import type { PipelineConfig } from '../config/schema.ts';
import { heldResponses } from '../current/index.ts';
import { AuthError, BusyError, StudyExportError } from '../errors.ts';
import { listResponses } from '../extract/index.ts';
import { shardNames } from '../output/layout.ts';
import type { ReconcileRecord } from '../output/manifest.ts';
import type { State, StateStore } from '../publish/state.ts';
import type { ExtractSinks, Warning } from '../records.ts';
import { inShard, type Shard } from '../shard.ts';
import type { Lease, Storage } from '../storage/types.ts';
import type { Row } from '../tables/index.ts';
import { openScratch } from '../util/scratch.ts';
import type { RunOptions } from './types.ts';

/** Warnings after which a listing is not known whole (as export-study.ts's INCOMPLETE_LISTING). */
const INCOMPLETE_LISTING = new Set([
  'page_repeated',
  'page_cap',
  'listing_beyond_declared',
  'listing_unsettled',
]);

const STUDIES_LISTED_AT_ONCE = 3;

/** What a run's reconcile found, study by study. */
export interface Reconciliation {
  /** When the listings were made (the deletions table's detected_at). */
  detectedAt: string;
  record: ReconcileRecord;
  /** The responses to take out of current/, by study. */
  removed: Map<string, Set<string>>;
  /** Studies whose reconcile went through (none held back, the listing whole): reconciled_at moves. */
  reconciled: Set<string>;
  /** What the run must report: studies held back by the guard, studies no longer listed. */
  warnings: Warning[];
  /** A study was held back by the guard: the run is partial (exit 3). */
  heldBack: boolean;
}

/** What a reconcile works with. */
export interface ReconcileInput {
  client: ApiClient;
  config: PipelineConfig;
  options: Pick<
    RunOptions,
    'reconcile' | 'acceptDeletions' | 'full' | 'dryRun' | 'recorded' | 'limit' | 'shard'
  >;
  state: State;
  storage: Storage;
  /** The run's studies, and every study the service lists (selected or not). */
  studies: readonly Study[];
  listedIds: ReadonlySet<string>;
  /** updated_since of each study in this run (null: a full export, which replaces its rows anyway). */
  since: (study: Study) => string | null;
  now: number;
}

/** The run's studies to reconcile: none for a run that cannot move current/. */
export function studiesDue(input: ReconcileInput): Study[] {
  const { options, config, state, now } = input;
  if (options.dryRun || options.recorded || options.limit !== undefined || options.full) return [];
  const every = durationMs(config.incremental.reconcile_every);
  const asked = options.reconcile === true || options.acceptDeletions === true;
  if (!asked && every === 0) return [];
  return input.studies.filter((study) => {
    const known = state.studies[study.id];
    // A full export replaces the study's rows: nothing to compare.
    if (known === undefined || input.since(study) === null) return false;
    if (asked || known.reconciled_at === undefined) return true;
    return now - Date.parse(known.reconciled_at) >= every;
  });
}

/** Lists the due studies whole and compares them with current/; null when none is due. */
export async function reconcile(input: ReconcileInput): Promise<Reconciliation | null> {
  const due = studiesDue(input);
  if (due.length === 0) return null;
  // Reported whenever the run reconciles, never acted on.
  const unlisted = unlistedStudies(input);
  // current/ first: a response it gains after this read is never taken for a deleted one.
  const held = await heldResponses(
    input.storage,
    due.map((study) => study.id),
  );
  const found: Reconciliation = {
    detectedAt: new Date().toISOString(),
    record: { studies: [], unlisted },
    removed: new Map(),
    reconciled: new Set(),
    warnings: unlisted.map(unlistedWarning),
    heldBack: false,
  };
  const scratch = await openScratch();
  try {
    const limit = pLimit(STUDIES_LISTED_AT_ONCE);
    await Promise.all(
      due.map((study) =>
        limit(async () => {
          const listed = await listedIds(input, study, scratch.dir);
          judge(input, found, study, held.get(study.id) ?? new Set(), listed);
        }),
      ),
    );
  } finally {
    await scratch.remove();
  }
  // Found missing once every listing is done.
  found.detectedAt = new Date().toISOString();
  return found;
}

/** Studies of the state (this shard's) that the service no longer lists. */
function unlistedStudies(input: ReconcileInput): ReconcileRecord['unlisted'] {
  if (input.options.recorded) return [];
  return Object.entries(input.state.studies)
    .filter(([id]) => inShard(id, input.options.shard) && !input.listedIds.has(id))
    .map(([id, known]) => ({ study_id: id, link_id: known.link_id }));
}

function unlistedWarning(study: { study_id: string; link_id: string }): Warning {
  return {
    code: 'study_not_listed',
    message: `study ${study.link_id} (${study.study_id}) is no longer listed by the service: deleted, or the key lost access to it; current/ keeps its responses (reconcile never removes a study)`,
    study_id: study.study_id,
    link_id: study.link_id,
  };
}

/** The ids the service lists for the study now, or why the listing is not known whole. */
async function listedIds(
  input: ReconcileInput,
  study: Study,
  spillDir: string,
): Promise<{ ids: Set<string> } | { incomplete: string }> {
  const ids = new Set<string>();
  let incomplete: string | null = null;
  // The reconcile's pages are compared, not exported: they go to no raw/ and no rejects.
  const sinks: ExtractSinks = {
    raw: { write() {} },
    rejects: {
      write(reject) {
        if (reject.response_id === undefined)
          incomplete ??= `a listed item without a readable id: ${reject.reason}`;
        else ids.add(reject.response_id);
      },
    },
    warn(warning) {
      if (INCOMPLETE_LISTING.has(warning.code)) incomplete ??= warning.message;
    },
  };
  const { config } = input;
  try {
    const listing = listResponses(
      input.client,
      study,
      {
        perPage: config.source.per_page,
        includeInProgress: config.source.include_in_progress,
        spillDir,
        maxPages: config.source.max_pages,
      },
      sinks,
    );
    for await (const item of listing) ids.add(item.id);
  } catch (error) {
    if (error instanceof AuthError || !(error instanceof StudyExportError)) throw error;
    return { incomplete: error.message };
  }
  return incomplete === null ? { ids } : { incomplete };
}

/** One study's verdict: what leaves current/, or why nothing does. */
function judge(
  input: ReconcileInput,
  found: Reconciliation,
  study: Study,
  held: ReadonlySet<string>,
  listed: { ids: Set<string> } | { incomplete: string },
): void {
  const base = { study_id: study.id, link_id: study.link_id, held: held.size };
  if ('incomplete' in listed) {
    found.record.studies.push({ ...base, listed: null, missing: null, removed: 0, outcome: 'incomplete' });
    found.warnings.push({
      code: 'reconcile_incomplete',
      message: `study ${study.link_id}: its listing for the reconcile was not whole (${listed.incomplete}); nothing was taken out of current/, the next run reconciles again`,
      study_id: study.id,
      link_id: study.link_id,
    });
    return;
  }
  const missing = [...held].filter((id) => !listed.ids.has(id));
  const counts = { ...base, listed: listed.ids.size, missing: missing.length };
  const fraction = input.config.incremental.reconcile_max_fraction;
  if (missing.length > fraction * held.size && input.options.acceptDeletions !== true) {
    found.heldBack = true;
    found.record.studies.push({ ...counts, removed: 0, outcome: 'held_back' });
    found.warnings.push({
      code: 'deletions_held_back',
      message: `study ${study.link_id} (${study.id}): the service lists ${listed.ids.size} responses and no longer lists ${missing.length} of the ${held.size} current/ holds, more than incremental.reconcile_max_fraction (${fraction}); none was taken out of current/. If they were deleted, run again with --accept-deletions`,
      study_id: study.id,
      link_id: study.link_id,
    });
    return;
  }
  found.reconciled.add(study.id);
  found.record.studies.push({
    ...counts,
    removed: missing.length,
    outcome: missing.length > 0 ? 'removed' : 'none',
  });
  if (missing.length > 0) found.removed.set(study.id, new Set(missing));
}

/** The deletions table's rows of the run. */
export function deletionRows(found: Reconciliation | null, runId: string): Row<'deletions'>[] {
  if (!found) return [];
  const rows: Row<'deletions'>[] = [];
  for (const [studyId, ids] of found.removed) {
    for (const id of [...ids].sort()) {
      rows.push({ response_id: id, study_id: studyId, detected_at: found.detectedAt, run_id: runId });
    }
  }
  return rows;
}

/** Responses the reconcile takes out of current/. */
export function removedCount(found: Reconciliation | null): number {
  let count = 0;
  for (const ids of found?.removed.values() ?? []) count += ids.size;
  return count;
}

/** Whether a run that otherwise found nothing new must be written for its reconcile. */
export function mustCommit(found: Reconciliation | null): boolean {
  return found !== null && (removedCount(found) > 0 || found.warnings.length > 0);
}

/** What the run's summary says of its reconcile. */
export function reconciledCounts(found: Reconciliation): {
  studies: number;
  removed: number;
  heldBack: number;
} {
  const { studies } = found.record;
  return {
    studies: studies.length,
    removed: removedCount(found),
    heldBack: studies.filter((study) => study.outcome === 'held_back').length,
  };
}

/**
 * A due reconcile that found nothing to remove, in a run that then writes nothing: the
 * studies' reconciled_at moves all the same (to the run's start, before the listings), or
 * every scheduled run would list them whole again until one commits. Only studies whose
 * listing was whole and held nothing back (`reconciled`); nothing else of their state moves,
 * so no watermark passes unwritten data. Under the pipeline's lease, from the state as it is
 * then: a run holding the lease is left to record its own.
 */
export async function recordReconciled(input: {
  storage: Storage;
  stateStore: StateStore;
  shard: Shard | undefined;
  found: Reconciliation;
  startedAt: number;
}): Promise<void> {
  const { found, startedAt } = input;
  if (found.reconciled.size === 0 || mustCommit(found)) return;
  let lease: Lease;
  try {
    lease = await input.storage.lease(shardNames(input.shard).lock);
  } catch (error) {
    if (error instanceof BusyError) return;
    throw error;
  }
  try {
    const before = await input.stateStore.read();
    const next: State = { ...before, studies: { ...before.studies } };
    const at = new Date(startedAt).toISOString();
    for (const id of found.reconciled) {
      const entry = before.studies[id];
      if (!entry || (entry.reconciled_at !== undefined && Date.parse(entry.reconciled_at) >= startedAt))
        continue;
      next.studies[id] = { ...entry, reconciled_at: at };
    }
    await input.stateStore.write(before, next);
  } finally {
    await lease.release();
  }
}
