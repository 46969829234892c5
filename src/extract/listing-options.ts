/** What a study's listing is asked to do (ListResponsesOptions) and what it reports (ListingStats). */
import type { ResponseClaims } from './keys.ts';

export interface ListResponsesOptions {
  perPage: number;
  updatedSince?: string;
  includeInProgress: boolean;
  /** Runaway guard when the study declares no count (source.max_pages), per pass. Default 100 000 pages. */
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

export interface ListingStats {
  /** Pages fetched, over all passes. */
  pages: number;
  /** Passes over the pages from page 0: more than one when the list moved while it was paged. */
  passes: number;
  /** Valid items seen on all pages, duplicates included. */
  listed: number;
  /** Rejects recorded (an item served again as it was is recorded once). */
  rejected: number;
  /** Distinct response ids yielded. */
  unique: number;
  /**
   * null while paging; then why paging stopped. Only empty_page means the listing is known
   * complete; list_moving: the list kept moving through every pass; limit: a sample's limit.
   */
  stoppedBy: 'empty_page' | 'repeated_page' | 'page_cap' | 'beyond_declared' | 'list_moving' | 'limit' | null;
  /** n from the study's desc, when it has the documented shape. */
  expected: number | null;
}
