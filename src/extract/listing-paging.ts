/**
 * Phase 1 of a listing (responses.ts): passes over the pages, each page to raw/ and each item
 * checked (listing-page.ts), what they serve put together (listing-passes.ts).
 */
import type { ApiClient } from '../api/client.ts';
import type { Study } from '../api/resources.ts';
import { type ExtractSinks, rejectRecord } from '../records.ts';
import type { ListingStats, ListResponsesOptions, PageGate } from './listing-options.ts';
import { type FetchedPage, fetchPage, readElements } from './listing-page.ts';
import {
  judgePass,
  ListingPass,
  ListingUnion,
  MAX_PASSES,
  movementSign,
  type PassVerdict,
} from './listing-passes.ts';
import { storable } from './nesting.ts';
import type { Spill } from './spill.ts';

const ungated: PageGate = (_expected, takePage) => takePage();

/**
 * Phase 1: passes over the pages (listing-passes.ts) until the list is known not to have moved
 * under them, or a guard stops it; every page to raw, every winning item to the spill.
 */
export async function pageIntoSpill(
  client: ApiClient,
  study: Study,
  options: ListResponsesOptions,
  sinks: ExtractSinks,
  stats: ListingStats,
  spill: Spill,
): Promise<ListingUnion> {
  const union = new ListingUnion();
  const declared = declaredCount(options, stats);
  const listing: Listing = {
    client,
    study,
    options,
    sinks: warningOnce(sinks),
    stats,
    spill,
    union,
    lines: 0,
  };
  let previous: ListingPass | null = null;
  let firstSign = '';
  for (let number = 1; ; number++) {
    const pass = new ListingPass(number);
    stats.passes = number;
    stats.stoppedBy = await pagePass(listing, pass);
    pass.end(union);
    // A guard stopped paging (it said why): the listing is incomplete, paging again would not help.
    if (stats.stoppedBy !== 'empty_page') break;
    const verdict = judgePass(pass, previous, union, declared);
    if (verdict !== 'again') {
      if (number > 1) warnSettled(listing, firstSign, pass, verdict);
      break;
    }
    const sign = movementSign(pass, union, declared);
    if (number === MAX_PASSES) {
      stats.stoppedBy = 'list_moving';
      warn(
        sinks,
        study,
        'listing_unsettled',
        `the list kept moving while it was paged (${sign}) through ${number} passes from page 0: the listing may be incomplete, so the study's watermark holds and the next run lists it again`,
      );
      break;
    }
    if (firstSign === '') firstSign = sign;
    previous = pass;
  }
  return union;
}

/** One listing's parts, as its passes share them. */
interface Listing {
  client: ApiClient;
  study: Study;
  options: ListResponsesOptions;
  sinks: ExtractSinks;
  stats: ListingStats;
  spill: Spill;
  union: ListingUnion;
  /** Lines in the spill. */
  lines: number;
}

/** One pass: pages from 0 until an empty one, or a runaway guard; says why it stopped. */
async function pagePass(
  listing: Listing,
  pass: ListingPass,
): Promise<NonNullable<ListingStats['stoppedBy']>> {
  const { study, options, sinks, stats } = listing;
  const maxPages = options.maxPages ?? 100_000;
  const gate = options.pageGate ?? ungated;
  let previousDigest: string | null = null;
  for (let page = 0; ; page++) {
    if (stats.expected !== null && pass.seen > listingBound(stats.expected, pass.largestPage)) {
      warn(
        sinks,
        study,
        'listing_beyond_declared',
        `stopped paging after ${page} pages and ${pass.seen} listed responses: far more than the ${stats.expected} its desc declares (pages of up to ${pass.largestPage}); the service may be paging endlessly. The listing may be incomplete, so the study's watermark holds`,
      );
      return 'beyond_declared';
    }
    if (page >= maxPages) {
      warn(
        sinks,
        study,
        'page_cap',
        `stopped after ${maxPages} pages (the page cap, source.max_pages, for a study whose desc declares no count); the listing may be incomplete, so the study's watermark holds`,
      );
      return 'page_cap';
    }
    const before = pass.seen;
    const expected = expectedOnPage(stats.expected, pass.seen, options.perPage);
    const taken = await gate(expected, () => takePage(listing, pass, page, previousDigest));
    pass.largestPage = Math.max(pass.largestPage, pass.seen - before);
    if (taken.stop !== null) return taken.stop;
    if (options.limit !== undefined && listing.union.winners.size >= options.limit) return 'limit';
    previousDigest = taken.digest;
  }
}

/** One page into the spill and raw/; says why paging stops, or null to go on. */
async function takePage(
  listing: Listing,
  pass: ListingPass,
  page: number,
  previousDigest: string | null,
): Promise<{ stop: 'empty_page' | 'repeated_page' | null; digest: string }> {
  const { client, study, options, sinks, stats, spill } = listing;
  const fetched = await fetchPage(client, study, options, page, sinks);
  stats.pages += 1;
  const stop = readPage(listing, pass, page, fetched, previousDigest);
  // Into raw/ once read whole: a page with an element that is not JSON fails before it gets
  // there, as a body that is not JSON never does.
  fetched.archive();
  // One wait per page, not per line: the page is let go sooner.
  await spill.drained();
  await sinks.raw.drained?.();
  return { stop, digest: fetched.digest };
}

function readPage(
  listing: Listing,
  pass: ListingPass,
  page: number,
  fetched: FetchedPage,
  previousDigest: string | null,
): 'empty_page' | 'repeated_page' | null {
  const { study, sinks, stats, spill, union } = listing;
  if (fetched.elements.length === 0) return 'empty_page';
  if (fetched.digest === previousDigest) {
    warn(
      sinks,
      study,
      'page_repeated',
      `page ${page} is identical to page ${page - 1}: the service seems to ignore \`page\`; stopped paging, the listing may be incomplete`,
    );
    return 'repeated_page';
  }
  readElements(study, page, fetched, {
    accept(item, bytes) {
      pass.seen += 1;
      stats.listed += 1;
      pass.serve(item.id, union);
      // Into the spill at once, and only a copy that wins: past its memory, each is let go
      // while the page is still read.
      if (!union.keepNewest(item, listing.lines)) return;
      spill.add(item, bytes);
      listing.lines += 1;
    },
    reject(raw, reason) {
      pass.seen += 1;
      const id = idOf(raw);
      if (id !== undefined) pass.serve(id, union);
      if (!union.addReject(storable(raw), id)) return;
      stats.rejected += 1;
      rejectItem(sinks, study, raw, reason, id);
    },
    warn: (code, message) => warn(sinks, study, code, message),
  });
  return null;
}

/**
 * What a listing paged more than once says when it settled: how the list moved, or (a second
 * pass alike to the first) the ids the service lists twice each time; a count short of the
 * desc's is said by the count's own warning.
 */
function warnSettled(listing: Listing, firstSign: string, last: ListingPass, verdict: PassVerdict): void {
  const { sinks, study, union } = listing;
  if (verdict === 'stable' && last.number === 2) {
    const [first] = last.twice;
    if (first === undefined) return;
    const more = last.twice.size - 1;
    warn(
      sinks,
      study,
      'response_listed_twice',
      `the service lists response "${first}"${more > 0 ? ` and ${more} more` : ''} twice on every pass over the pages (paged twice, alike): the copy with the newest updated_at is kept`,
    );
    return;
  }
  const settledBy =
    verdict === 'settled'
      ? 'until a pass served every response once'
      : 'until two passes in a row served the same responses';
  warn(
    sinks,
    study,
    'listing_moved',
    `the list moved while it was paged (${firstSign}): paged it again from page 0 ${settledBy}, ${last.number} passes in all; ${union.foundLater} responses were found only by a later pass, ${union.found} in all`,
  );
}

/**
 * The most responses the next page should hold: what the study's desc declares is still to
 * come (at least one), at most a page; a full page when the desc declares no count. A desc
 * that undercounts lets a few pages overlap, never more than the studies listed at once.
 */
function expectedOnPage(expected: number | null, seen: number, perPage: number): number {
  if (expected === null) return perPage;
  return Math.min(perPage, Math.max(expected - seen, 1));
}

/**
 * How many list items (duplicates and invalid ones included) a study declaring `declared`
 * responses can account for in one pass: each response twice (edited or added while paging),
 * plus ten pages of the largest page seen (pages cut short, a count that lags the list).
 * Beyond it the listing is not converging.
 */
export function listingBound(declared: number, largestPage: number): number {
  return 2 * declared + 10 * Math.max(largestPage, 1);
}

function idOf(raw: unknown): string | undefined {
  const id = raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>).id : undefined;
  return typeof id === 'string' ? id : undefined;
}

/** The count the study's desc declares, where it is to be compared: an unfiltered listing. */
export function declaredCount(options: ListResponsesOptions, stats: ListingStats): number | null {
  return options.updatedSince === undefined && options.includeInProgress ? stats.expected : null;
}

export function rejectItem(
  sinks: ExtractSinks,
  study: Study,
  raw: unknown,
  reason: string,
  id: string | undefined,
): void {
  sinks.rejects.write(
    rejectRecord('list_responses', reason, storable(raw), {
      study_id: study.id,
      link_id: study.link_id,
      ...(id === undefined ? {} : { response_id: id }),
    }),
  );
}

/** The sinks, with each warning given once: a pass over the pages again repeats an item's. */
function warningOnce(sinks: ExtractSinks): ExtractSinks {
  const given = new Set<string>();
  return {
    raw: sinks.raw,
    rejects: sinks.rejects,
    warn(warning) {
      const key = `${warning.code}\u0000${warning.message}`;
      if (given.has(key)) return;
      given.add(key);
      sinks.warn(warning);
    },
  };
}

export function warn(sinks: ExtractSinks, study: Study, code: string, message: string): void {
  sinks.warn({
    code,
    message: `study "${study.link_id}": ${message}`,
    study_id: study.id,
    link_id: study.link_id,
  });
}
