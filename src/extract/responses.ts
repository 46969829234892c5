/**
 * The responses of one study (spec 4.2), deduplicated, as an async iterable.
 *
 * Paging: pages from 0; the service may cap per_page below what was asked and gives no
 * total, so only an EMPTY page ends the listing, never a short one. A page identical to the
 * previous one (a server ignoring `page`) and a page cap end it with a warning.
 *
 * Dedupe without holding a large study: phase 1 spills every valid item (kept in memory while
 * the listing is small, else to a temporary JSONL file: src/extract/spill.ts) and keeps only
 * id -> (newest updated_at, line); phase 2 re-reads the spill and yields each id's winning
 * line. A response edited while being paged can appear twice; the newer wins.
 */
import type { ApiClient } from '../api/client.ts';
import type { JsonArrayElements } from '../api/json-array.ts';
import {
  checked,
  describeIssues,
  ListedResponse,
  responseCountInDesc,
  type Study,
} from '../api/resources.ts';
import { PayloadError } from '../errors.ts';
import { archiveRaw, type ExtractSinks, rejectRecord } from '../records.ts';
import { redact } from '../redact.ts';
import { compareInstants, type Instant, parseTimestamp } from '../util/timestamp.ts';
import { keyedAnswers, ownedElsewhere, type ResponseClaims, repeatedKeyReason } from './keys.ts';
import { jsonText, MAX_NESTING, nestsDeeperThan, storable, tooDeepReason } from './nesting.ts';
import { pageDigest, parsedElements, wholePage } from './page.ts';
import { Spill } from './spill.ts';

export interface ListResponsesOptions {
  perPage: number;
  updatedSince?: string;
  includeInProgress: boolean;
  /** Runaway guard when the study declares no count (source.max_pages). Default 100 000 pages. */
  maxPages?: number;
  /** Where the listing's temporary file goes, if it needs one (default: the OS temp dir). */
  spillDir?: string;
  /** A listing up to this size as received stays in memory (default: src/extract/spill.ts). */
  spillMemoryBytes?: number;
  /**
   * Runs each page's fetch and handling (a page is the largest thing a listing holds). A run
   * passes one gate to all its studies that admits pages while the responses they are
   * expected to hold add up to at most one full page, so listings running side by side do not
   * add up their pages in memory, and small studies' pages go at once.
   */
  pageGate?: PageGate;
  /**
   * The run's claims on response ids (src/extract/keys.ts): a response another study holds is
   * a reject here. Without it, only this listing's own ids are deduplicated.
   */
  claims?: ResponseClaims;
  /**
   * At most this many responses, the first ones listed (run --limit, a sample): pages are asked
   * for no larger than that, and paging stops once the listing holds that many.
   */
  limit?: number;
}

/** `expected`: the most responses the page should hold (see expectedOnPage). */
export type PageGate = <T>(expected: number, takePage: () => Promise<T>) => Promise<T>;

const ungated: PageGate = (_expected, takePage) => takePage();

export interface ListingStats {
  pages: number;
  /** Valid items seen on all pages, duplicates included. */
  listed: number;
  rejected: number;
  /** Distinct response ids yielded. */
  unique: number;
  /** null while paging; then why paging stopped (only empty_page means the listing is known complete). */
  stoppedBy: 'empty_page' | 'repeated_page' | 'page_cap' | 'beyond_declared' | 'limit' | null;
  /** n from the study's desc, when it has the documented shape. */
  expected: number | null;
}

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

interface Winner {
  version: Instant;
  line: number;
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
    const winners = await pageIntoSpill(client, study, options, sinks, stats, spill);
    await spill.finish();
    stats.unique = Math.min(winners.size, options.limit ?? winners.size);
    warnOnCountMismatch(study, options, sinks, stats);
    return { spill, winners };
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
        rejectItem(sinks, study, response, ownedElsewhere(response.id, study, owner));
        continue;
      }
      yielded += 1;
      yield response;
    }
  } finally {
    await spill.remove();
  }
}

/** Phase 1: every page to raw, every valid item to the spill; returns each id's newest line. */
async function pageIntoSpill(
  client: ApiClient,
  study: Study,
  options: ListResponsesOptions,
  sinks: ExtractSinks,
  stats: ListingStats,
  spill: Spill,
): Promise<Map<string, Winner>> {
  const maxPages = options.maxPages ?? 100_000;
  const gate = options.pageGate ?? ungated;
  const winners = new Map<string, Winner>();
  let previousDigest: string | null = null;
  let line = 0;

  /** One page into the spill and raw/; says why paging stops, or null to go on. */
  async function takePage(page: number): Promise<ListingStats['stoppedBy']> {
    const fetched = await fetchPage(client, study, options, page, sinks);
    stats.pages += 1;
    const stop = readPage(page, fetched);
    // Into raw/ once read whole: a page with an element that is not JSON fails before it gets
    // there, as a body that is not JSON never does.
    fetched.archive();
    // One wait per page, not per line: the page is let go sooner.
    await spill.drained();
    await sinks.raw.drained?.();
    return stop;
  }

  function readPage(
    page: number,
    { elements, tooDeep, digest, url }: FetchedPage,
  ): ListingStats['stoppedBy'] {
    if (elements.length === 0) return 'empty_page';
    if (digest === previousDigest) {
      warn(
        sinks,
        study,
        'page_repeated',
        `page ${page} is identical to page ${page - 1}: the service seems to ignore \`page\`; stopped paging, the listing may be incomplete`,
      );
      return 'repeated_page';
    }
    previousDigest = digest;
    // One element at a time, each let go once checked and spilled: the page is never whole in memory.
    for (let index = 0; index < elements.length; index++) {
      const element = elements.element(index);
      if (!element.ok) throw pageError(study, `page ${page} [${index}] is ${element.reason}`, url);
      const raw = element.value;
      if (tooDeep && nestsDeeperThan(raw)) {
        stats.rejected += 1;
        rejectItem(sinks, study, raw, `page ${page} [${index}] ${tooDeepReason}`);
        continue;
      }
      const parsed = checked(ListedResponse, raw);
      if (!parsed.success) {
        stats.rejected += 1;
        rejectItem(sinks, study, raw, `page ${page} [${index}] ${describeIssues(parsed.error)}`);
        continue;
      }
      const differing = element.repeatedKeys?.find((repeated) => !repeated.alike);
      if (differing) {
        stats.rejected += 1;
        rejectItem(sinks, study, raw, `page ${page} [${index}] ${repeatedKeyReason(differing)}`);
        continue;
      }
      const keyed = keyedAnswers(parsed.data);
      if (!keyed.ok) {
        stats.rejected += 1;
        rejectItem(sinks, study, raw, `page ${page} [${index}] ${keyed.reason}`);
        continue;
      }
      for (const { member, key, copies } of element.repeatedKeys ?? []) {
        warn(
          sinks,
          study,
          'duplicate_key',
          `response "${keyed.item.id}" sends ${member} key "${key}" ${copies} times, every copy alike; kept once`,
        );
      }
      for (const { answer_id, copies } of keyed.collapsed) {
        warn(
          sinks,
          study,
          'duplicate_answer',
          `response "${keyed.item.id}" lists answer_id "${answer_id}" ${copies} times, every copy alike; kept once`,
        );
      }
      stats.listed += 1;
      // Into the spill at once: past its memory, each validated copy is let go while the page is still read.
      spill.add(keyed.item, element.bytes);
      keepNewest(winners, keyed.item, line);
      line += 1;
    }
    return null;
  }

  let largestPage = 0;
  for (let page = 0; stats.stoppedBy === null; page++) {
    const seen = stats.listed + stats.rejected;
    if (stats.expected !== null && seen > listingBound(stats.expected, largestPage)) {
      stats.stoppedBy = 'beyond_declared';
      warn(
        sinks,
        study,
        'listing_beyond_declared',
        `stopped paging after ${page} pages and ${seen} listed responses: far more than the ${stats.expected} its desc declares (pages of up to ${largestPage}); the service may be paging endlessly. The listing may be incomplete, so the study's watermark holds`,
      );
      break;
    }
    if (page >= maxPages) {
      stats.stoppedBy = 'page_cap';
      warn(
        sinks,
        study,
        'page_cap',
        `stopped after ${maxPages} pages (the page cap, source.max_pages, for a study whose desc declares no count); the listing may be incomplete, so the study's watermark holds`,
      );
      break;
    }
    const before = stats.listed + stats.rejected;
    stats.stoppedBy = await gate(expectedOnPage(stats, options.perPage), () => takePage(page));
    largestPage = Math.max(largestPage, stats.listed + stats.rejected - before);
    if (stats.stoppedBy === null && options.limit !== undefined && winners.size >= options.limit)
      stats.stoppedBy = 'limit';
  }
  return winners;
}

/**
 * The most responses the next page should hold: what the study's desc declares is still to
 * come (at least one), at most a page; a full page when the desc declares no count. A desc
 * that undercounts lets a few pages overlap, never more than the studies listed at once.
 */
function expectedOnPage(stats: ListingStats, perPage: number): number {
  if (stats.expected === null) return perPage;
  const toCome = stats.expected - stats.listed - stats.rejected;
  return Math.min(perPage, Math.max(toCome, 1));
}

/** A listing page as read: its elements, and its raw record to archive once they are read. */
interface FetchedPage {
  elements: JsonArrayElements;
  tooDeep: boolean;
  digest: string;
  url: string;
  archive(): void;
}

async function fetchPage(
  client: ApiClient,
  study: Study,
  options: ListResponsesOptions,
  page: number,
  sinks: ExtractSinks,
): Promise<FetchedPage> {
  const query = { page, perPage: options.perPage, includeInProgress: options.includeInProgress };
  const fetched = await client.listResponses(
    study.link_id,
    options.updatedSince === undefined ? query : { ...query, updatedSince: options.updatedSince },
  );
  const elements =
    fetched.elements ?? (Array.isArray(fetched.payload) ? parsedElements(fetched.payload) : null);
  const tooDeep = elements ? elements.nestsDeeperThan(MAX_NESTING) : nestsDeeperThan(fetched.payload);
  // A page too deep to write out as it is goes to raw/ as its JSON text (written without recursion).
  const received = tooDeep ? { ...fetched, payload: jsonText(wholePage(fetched)) } : fetched;
  const archive = () =>
    archiveRaw(sinks.raw, 'list_responses', received, { link_id: study.link_id, study_id: study.id, page });
  if (!elements) {
    archive();
    throw pageError(study, `page ${page} is not a JSON array of responses`, fetched.url, fetched.status);
  }
  return { elements, tooDeep, digest: pageDigest(received), url: fetched.url, archive };
}

function pageError(study: Study, what: string, url: string, status?: number): PayloadError {
  return new PayloadError(`list_responses for study "${study.link_id}": ${redact(what)} (${url})`, {
    context: {
      operation: 'list_responses',
      study: study.link_id,
      url,
      ...(status === undefined ? {} : { status }),
    },
  });
}

/**
 * How many list items (duplicates and invalid ones included) a study declaring `declared`
 * responses can account for: each response twice (edited or added while paging), plus ten
 * pages of the largest page seen (pages cut short, a count that lags the list). Beyond it the
 * listing is not converging.
 */
export function listingBound(declared: number, largestPage: number): number {
  return 2 * declared + 10 * Math.max(largestPage, 1);
}

/**
 * Newest updated_at (else created_at) wins, to the microsecond; on a tie the later listing
 * wins. This orders copies within one listing only: across runs the later-fetched copy is
 * the current one (src/current/merge.ts).
 */
function keepNewest(winners: Map<string, Winner>, response: ListedResponse, line: number): void {
  const version = parseTimestamp(response.updated_at ?? response.created_at) as Instant;
  const current = winners.get(response.id);
  if (current === undefined || compareInstants(version, current.version) >= 0)
    winners.set(response.id, { version, line });
}

function rejectItem(sinks: ExtractSinks, study: Study, raw: unknown, reason: string): void {
  const id = raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>).id : undefined;
  sinks.rejects.write(
    rejectRecord('list_responses', reason, storable(raw), {
      study_id: study.id,
      link_id: study.link_id,
      ...(typeof id === 'string' ? { response_id: id } : {}),
    }),
  );
}

/** The desc count covers every response, so compare only an unfiltered listing. */
function warnOnCountMismatch(
  study: Study,
  options: ListResponsesOptions,
  sinks: ExtractSinks,
  stats: ListingStats,
): void {
  if (options.updatedSince !== undefined || !options.includeInProgress || stats.expected === null) return;
  // A sample lists only the first responses.
  if (options.limit !== undefined) return;
  const found = stats.unique + stats.rejected;
  if (found === stats.expected) return;
  warn(
    sinks,
    study,
    'response_count_mismatch',
    `found ${found} responses (${stats.unique} valid, ${stats.rejected} rejected) but the study's desc says ${stats.expected}`,
  );
}

function warn(sinks: ExtractSinks, study: Study, code: string, message: string): void {
  sinks.warn({
    code,
    message: `study "${study.link_id}": ${message}`,
    study_id: study.id,
    link_id: study.link_id,
  });
}
