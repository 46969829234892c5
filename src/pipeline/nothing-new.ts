/**
 * When a run writes no run folder. A night with nothing new on the service should not add
 * an empty run and move `latest` to it: `latest` would then name a run holding none of the
 * data, and the runs folder would fill with empty runs. So a run is committed only when it
 * exported something or has something to report; otherwise nothing is written and the state
 * is left as it is (a watermark that does not move only makes the next listing start a little
 * earlier: nothing is skipped). Such a run mostly knows before it writes anything (lookAhead):
 * it then takes no lease and stages no run. One that learns it only after taking its lease
 * (it first finished a killed run's records) discards its run folder before the commit.
 *
 * A run is always written when it is a first run (no earlier run in `latest` or the state), a
 * full export of any study (--full, incremental: false, a study seen for the first time,
 * recordings owed from the beginning), a replay, or when anything at all was fetched,
 * rejected, archived, failed or warned about (warnings are kept in the manifest), or a study
 * is seen under a new link_id. Only the state decides, not `latest`: a CI runner that restores
 * nothing but state/ (examples/github-actions.yml) has no `latest`, and its empty nights write
 * nothing either.
 */
import pLimit from 'p-limit';
import type { ApiClient, Fetched } from '../api/client.ts';
import { responseCountInDesc, type Study } from '../api/resources.ts';
import type { StudyOutcome } from '../output/manifest.ts';
import type { State } from '../publish/state.ts';
import { weightedGate } from '../util/concurrency.ts';
import { emptyOutcome } from './export-study.ts';

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

export interface LookAheadInput {
  client: ApiClient;
  studies: Study[];
  /** updated_since of each study (null: listed from the beginning). */
  since: (study: Study) => string | null;
  state: State;
  /** The run `latest` names, null when there is none. */
  latest: string | null;
  /** Rejects and warnings so far (the study list's included). */
  rejects: number;
  warnings: () => number;
  /** Whether the shard's earlier runs left records to finish (src/publish/record.ts). */
  pending: () => Promise<boolean>;
  perPage: number;
  includeInProgress: boolean;
  concurrency: number;
}

/**
 * Finds out, before a run takes its lease or writes anything, whether it can only find nothing
 * new. Nothing is asked when the run is written whatever the listings hold (the rule above,
 * every study's listing empty) or when the shard has records to finish; else each study's
 * first page from its watermark, until one holds anything. All empty: nothing new since
 * `sinceRun`. Else the run goes on with `client`, which answers each study's first listing
 * request with the answer already received, so that the look-ahead costs a run with something
 * new no request. A page asked for after the run started is as good as one asked for later:
 * the watermarks a run records are its start time (watermark.ts); the run asks again only when
 * another run committed in between (run.ts), whose copies could be newer.
 */
export async function lookAhead(
  input: LookAheadInput,
): Promise<{ sinceRun: string | null; client: ApiClient }> {
  const outcomes = input.studies.map((study) => emptyOutcome(study, input.since(study)));
  const findings = (): RunFindings => ({
    outcomes,
    state: input.state,
    rejects: input.rejects,
    warnings: input.warnings(),
    mediaArchived: 0,
  });
  if (nothingNewSince(findings(), input.latest) === null || (await input.pending()))
    return { sinceRun: null, client: input.client };
  const first = await firstPages(input);
  const sinceRun = first.allEmpty ? nothingNewSince(findings(), input.latest) : null;
  return { sinceRun, client: sinceRun === null ? answering(input.client, first.answers) : input.client };
}

/** A first listing page as the service answered: the page, or the error it came to. */
type Answer = { page: Fetched } | { error: unknown };

/**
 * Each study's first listing page, until one holds anything or fails; the answers by link_id
 * and since. As a run's listings, the pages in flight hold at most one full page of responses
 * together, and so do the ones kept when it stops.
 */
async function firstPages(
  input: LookAheadInput,
): Promise<{ allEmpty: boolean; answers: Map<string, Answer[]> }> {
  const answers = new Map<string, Answer[]>();
  let allEmpty = true;
  const limit = pLimit(input.concurrency);
  const gate = weightedGate(input.perPage);
  await Promise.all(
    input.studies.map((study, index) =>
      limit(async () => {
        if (!allEmpty) return;
        const since = input.since(study);
        const expected = Math.min(
          input.perPage,
          Math.max(responseCountInDesc(study.desc) ?? input.perPage, 1),
        );
        const query = { page: 0, perPage: input.perPage, includeInProgress: input.includeInProgress };
        let answer: Answer;
        try {
          answer = {
            page: await gate(index, expected, () =>
              input.client.listResponses(
                study.link_id,
                since === null ? query : { ...query, updatedSince: since },
              ),
            ),
          };
        } catch (error) {
          // The run's listing of the study meets it, and deals with it as it would have.
          answer = { error };
        }
        if (!('page' in answer) || !isEmptyPage(answer.page)) allEmpty = false;
        const key = pageKey(study.link_id, since);
        answers.set(key, [...(answers.get(key) ?? []), answer]);
      }),
    ),
  );
  return { allEmpty, answers };
}

function isEmptyPage(page: Fetched): boolean {
  return page.elements
    ? page.elements.length === 0
    : Array.isArray(page.payload) && page.payload.length === 0;
}

function pageKey(linkId: string, since: string | null | undefined): string {
  return `${linkId}\u0000${since ?? ''}`;
}

/** `client`, answering a first listing request it has an answer for with that answer, once. */
function answering(client: ApiClient, answers: Map<string, Answer[]>): ApiClient {
  return {
    baseUrl: client.baseUrl,
    ...(client.serviceClock ? { serviceClock: client.serviceClock } : {}),
    counters: client.counters,
    limit: client.limit,
    listStudies: () => client.listStudies(),
    async listResponses(linkId, query) {
      const answer = query.page === 0 ? answers.get(pageKey(linkId, query.updatedSince))?.shift() : undefined;
      if (answer === undefined) return client.listResponses(linkId, query);
      if ('page' in answer) return answer.page;
      throw answer.error;
    },
    getResponse: (linkId, responseId) => client.getResponse(linkId, responseId),
    close: () => client.close(),
  };
}

/** Every API request the run made (each attempt), from the client's counters. */
export function requestCount(requests: Record<string, Record<string, number>>): number {
  let total = 0;
  for (const byOutcome of Object.values(requests)) for (const n of Object.values(byOutcome)) total += n;
  return total;
}
