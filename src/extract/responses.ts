/**
 * The responses of one study (spec 4.2), deduplicated, as an async iterable.
 *
 * Paging: pages from 0; the service may cap per_page below what was asked and gives no
 * total, so only an EMPTY page ends a pass over the pages, never a short one. A page identical
 * to the previous one (a server ignoring `page`) and the runaway guards end it with a warning.
 * A list that moves while it is paged is paged again until it settles (listing-passes.ts).
 *
 * Dedupe without holding a large study: phase 1 spills each valid item that is its id's newest
 * copy so far (kept in memory while the listing is small, else in a temporary JSONL file:
 * src/extract/spill.ts) and keeps only id -> (newest updated_at, line); phase 2 re-reads the
 * spill and yields each id's winning line. A response edited while being paged can appear
 * twice; the newer wins.
 */
import type { ApiClient } from '../api/client.ts';
import { type ListedResponse, responseCountInDesc, type Study } from '../api/resources.ts';
import type { ExtractSinks } from '../records.ts';
import { ownedElsewhere } from './keys.ts';
import type { ListingStats, ListResponsesOptions } from './listing-options.ts';
import { declaredCount, pageIntoSpill, rejectItem, warn } from './listing-paging.ts';
import type { ListingUnion, Winner } from './listing-passes.ts';
import { Spill } from './spill.ts';

/** Iterated once: the iteration reads (then removes) what paging spilled. */
export interface ResponseListing extends AsyncIterable<ListedResponse> {
  /** Filled in while iterating; final once the iteration ends. */
  readonly stats: ListingStats;
  /**
   * Pages the whole listing into the spill now, once (the iteration does it otherwise): a run
   * lists a study ahead, while it still has other studies' details in flight.
   */
  paged(): Promise<void>;
}

/** Phase 1's result: the spill and each id's winning line in it. */
interface Paged {
  spill: Spill;
  winners: Map<string, Winner>;
}

export function listResponses(
  client: ApiClient,
  study: Study,
  given: ListResponsesOptions,
  sinks: ExtractSinks,
): ResponseListing {
  const options =
    given.limit === undefined ? given : { ...given, perPage: Math.min(given.perPage, given.limit) };
  const stats: ListingStats = {
    pages: 0,
    passes: 0,
    listed: 0,
    rejected: 0,
    unique: 0,
    stoppedBy: null,
    expected: responseCountInDesc(study.desc),
  };
  let paging: Promise<Paged> | null = null;
  const paged = () => {
    paging ??= pageAll(client, study, options, sinks, stats);
    return paging;
  };
  return {
    stats,
    paged: async () => {
      await paged();
    },
    [Symbol.asyncIterator]: () => readWinners(paged(), study, options, sinks, stats),
  };
}

async function pageAll(
  client: ApiClient,
  study: Study,
  options: ListResponsesOptions,
  sinks: ExtractSinks,
  stats: ListingStats,
): Promise<Paged> {
  const spill = new Spill(options.spillDir, options.spillMemoryBytes);
  try {
    const union = await pageIntoSpill(client, study, options, sinks, stats, spill);
    await spill.finish();
    stats.unique = Math.min(union.winners.size, options.limit ?? union.winners.size);
    warnOnCountMismatch(study, options, sinks, stats, union);
    return { spill, winners: union.winners };
  } catch (error) {
    await spill.remove();
    throw error;
  }
}

/**
 * Phase 2: the spill read back, each id's winning line only, if no other study holds the id;
 * with a limit, no more than that many.
 */
async function* readWinners(
  paging: Promise<Paged>,
  study: Study,
  { claims, limit }: Pick<ListResponsesOptions, 'claims' | 'limit'>,
  sinks: ExtractSinks,
  stats: ListingStats,
): AsyncGenerator<ListedResponse> {
  const { spill, winners } = await paging;
  try {
    let line = 0;
    let yielded = 0;
    for await (const item of spill.read()) {
      if (limit !== undefined && yielded >= limit) break;
      const response = item as ListedResponse;
      const won = winners.get(response.id)?.line === line;
      line += 1;
      if (!won) continue;
      const owner = await claims?.claim(response.id, study);
      if (owner) {
        stats.rejected += 1;
        stats.unique -= 1;
        rejectItem(sinks, study, response, ownedElsewhere(response.id, study, owner), response.id);
        continue;
      }
      yielded += 1;
      yield response;
    }
  } finally {
    await spill.remove();
  }
}

/** The desc count covers every response, so compare only an unfiltered listing. */
function warnOnCountMismatch(
  study: Study,
  options: ListResponsesOptions,
  sinks: ExtractSinks,
  stats: ListingStats,
  union: ListingUnion,
): void {
  const declared = declaredCount(options, stats);
  // A sample lists only the first responses.
  if (declared === null || options.limit !== undefined) return;
  const found = union.found;
  if (found === declared) return;
  const again = stats.passes > 1 ? `, on ${stats.passes} passes over the pages` : '';
  warn(
    sinks,
    study,
    'response_count_mismatch',
    `found ${found} responses (${union.winners.size} valid, ${found - union.winners.size} rejected${again}) but the study's desc says ${declared}`,
  );
}
