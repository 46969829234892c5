/**
 * How the current dataset merges a study's previous rows with a run's new rows. Pure: the
 * decisions are made here, the reading and writing elsewhere (bucket.ts), row group by row
 * group, so a big study never has to fit in memory.
 *
 * The rules, per study:
 * - A response is one unit. Its copy in the run replaces the previous copy of its row in
 *   `responses` AND all of its rows in answers, transcript, attributes and media. Rows that
 *   the run's copy no longer has (a shorter transcript, a removed URL parameter) disappear
 *   with the old copy: child rows are never merged one by one.
 * - The later-fetched copy wins, whatever its updated_at: a run's copy is what the service
 *   said last. updated_at orders copies within one listing only (src/extract/responses.ts);
 *   across runs it could not, since a service may re-stamp a response earlier (a 2099 stamp
 *   corrected, a stamp reset to 1970) and the stale copy would then stay for good.
 * - A response whose detail could not be fetched in the run (its transcript is missing) is
 *   incomplete: its previous copy, when there is one, stays whole.
 * - `studies`: the run's row replaces the previous one.
 * - `questions`: slots keep their first-seen text and position; new slots are numbered after
 *   the previous ones, in the run's order.
 * - replace (a full, lossless export of the study): the run's rows are the whole study; only
 *   incomplete responses keep their previous copy. Responses deleted on the service go away.
 * - removed (a reconcile: responses the service no longer lists): their previous rows go, in
 *   every response table, unless the run itself fetched a copy (then it lists them after all).
 */
import type { Row, TableName } from '../tables/index.ts';

/** Tables whose rows belong to one response, and go and come with it. */
export const responseTables = ['responses', 'answers', 'transcript', 'attributes', 'media'] as const;
export type ResponseTable = (typeof responseTables)[number];

export function isResponseTable(table: TableName): table is ResponseTable {
  return (responseTables as readonly string[]).includes(table);
}

/** What the plan knows of a response row: its id. */
export interface ResponseVersion {
  response_id: string;
}

export interface MergeOptions {
  /** A full, lossless export of the study: the run's rows are the whole study. */
  replace: boolean;
  /** Responses of the run whose copy is incomplete (their detail could not be fetched). */
  incomplete: ReadonlySet<string>;
  /** Responses the service no longer lists: their previous copy goes. */
  removed?: ReadonlySet<string>;
}

/** Which copy of each response the merged part holds. */
export interface MergePlan {
  replace: boolean;
  /** Responses of the run whose copy goes in (replacing any previous copy). */
  takeNew: Set<string>;
  /** Responses of the run whose previous copy stays (the run's is incomplete). */
  keepPrevious: Set<string>;
  /** Previous copies that go with no new one (a reconcile's). */
  removed: ReadonlySet<string>;
}

/** A plan that has seen the run's responses and not yet the previous ones. */
export class MergePlanner {
  readonly #incoming = new Set<string>();
  readonly #previousSeen = new Set<string>();
  readonly #keepPrevious = new Set<string>();

  constructor(private readonly options: MergeOptions) {}

  /** Every response row of the run, first. */
  addIncoming(version: ResponseVersion): void {
    this.#incoming.add(version.response_id);
  }

  /** Then every response row of the previous part; true when that row stays. */
  keepPreviousResponse(version: ResponseVersion): boolean {
    const id = version.response_id;
    this.#previousSeen.add(id);
    if (!this.#incoming.has(id)) return !this.options.replace && !this.options.removed?.has(id);
    if (this.options.incomplete.has(id)) {
      this.#keepPrevious.add(id);
      return true;
    }
    return false;
  }

  plan(): MergePlan {
    const takeNew = new Set<string>();
    for (const id of this.#incoming) if (!this.#keepPrevious.has(id)) takeNew.add(id);
    const removed = new Set([...(this.options.removed ?? [])].filter((id) => !this.#incoming.has(id)));
    return { replace: this.options.replace, takeNew, keepPrevious: new Set(this.#keepPrevious), removed };
  }
}

/** Whether a previous row of a response table stays in the merged part. */
export function keepPreviousRow(plan: MergePlan, row: { response_id: string }): boolean {
  if (plan.keepPrevious.has(row.response_id)) return true;
  if (plan.replace || plan.removed.has(row.response_id)) return false;
  return !plan.takeNew.has(row.response_id);
}

/** Whether a new row of a response table goes into the merged part. */
export function keepNewRow(plan: MergePlan, row: { response_id: string }): boolean {
  return plan.takeNew.has(row.response_id);
}

/** Question slots: the previous ones as they were, then the run's new slots numbered after them. */
export function mergeQuestions(
  previous: readonly Row<'questions'>[],
  incoming: readonly Row<'questions'>[],
  replace: boolean,
): Row<'questions'>[] {
  if (replace) return [...incoming];
  const key = (q: Row<'questions'>) => JSON.stringify([q.discussion_guide_question_id, q.concept_id]);
  const seen = new Set(previous.map(key));
  let position = previous.reduce((max, q) => Math.max(max, q.position), 0);
  const added: Row<'questions'>[] = [];
  for (const q of [...incoming].sort((a, b) => a.position - b.position)) {
    if (seen.has(key(q))) continue;
    seen.add(key(q));
    added.push({ ...q, position: ++position });
  }
  return [...previous, ...added];
}
