/**
 * A list that moves while it is paged (docs/keys-and-time.md#a-list-that-moves-while-it-is-paged).
 *
 * Pages are numbered, so page p is whatever sits at places p·n to p·n+n-1 when it is asked
 * for. When a response already served moves past the page boundary (a service sorted by
 * updated_at, a response edited), every later one moves back one place and the one at the
 * boundary is served by no page; the moved one is served again. So a pass (page 0 to an
 * empty page) that serves no id twice served every response that stayed in the list while it
 * paged: when it asked its empty page (or its first short one) it had served as many distinct
 * responses as the list then held and, none having left it, they are the list. An id served
 * twice is the sign; on an unfiltered listing, fewer responses than the study's desc declares
 * is another (what a response deleted while paging leaves).
 *
 * Then the listing pages again from page 0, adding to what earlier passes served (each id's
 * newest copy wins), until a pass shows no sign, or two passes in a row serve the same ids
 * with the same ones twice (a list that no longer moves: its duplicates and its count are
 * the service's own), at most MAX_PASSES passes. A listing that does not settle is
 * incomplete: the study's watermark holds.
 */
import { createHash } from 'node:crypto';
import type { ListedResponse } from '../api/resources.ts';
import { compareInstants, type Instant, parseTimestamp } from '../util/timestamp.ts';

/** Passes of one listing, the first included: three more chances for a moving list to settle. */
export const MAX_PASSES = 4;

export interface Winner {
  version: Instant;
  line: number;
}

/** What the passes of one listing served together. */
export class ListingUnion {
  /** Each valid id's newest copy: its line in the spill. */
  readonly winners = new Map<string, Winner>();
  /** Ids of rejected items (served, but not valid responses). */
  readonly #rejectedIds = new Set<string>();
  /** The rejects recorded, by their content, so a pass that serves one again records it once. */
  readonly #rejects = new Set<string>();
  #rejectsWithoutId = 0;
  /** Ids no first pass served: what paging again found. */
  foundLater = 0;

  has(id: string): boolean {
    return this.winners.has(id) || this.#rejectedIds.has(id);
  }

  /**
   * Newest updated_at (else created_at) wins, to the microsecond; on a tie the later copy
   * wins. This orders copies within one listing only: across runs the later-fetched copy is
   * the current one (src/current/merge.ts). True when `response` is now its id's winner.
   */
  keepNewest(response: ListedResponse, line: number): boolean {
    const version = parseTimestamp(response.updated_at ?? response.created_at) as Instant;
    const current = this.winners.get(response.id);
    if (current !== undefined && compareInstants(version, current.version) < 0) return false;
    this.winners.set(response.id, { version, line });
    return true;
  }

  /** A rejected item; false when this listing recorded the same item before. */
  addReject(raw: unknown, id: string | undefined): boolean {
    const digest = createHash('sha256').update(JSON.stringify(raw)).digest('base64');
    if (this.#rejects.has(digest)) return false;
    this.#rejects.add(digest);
    if (id === undefined) this.#rejectsWithoutId += 1;
    else this.#rejectedIds.add(id);
    return true;
  }

  /** Distinct responses served, valid or not. */
  get found(): number {
    let rejectedOnly = this.#rejectsWithoutId;
    for (const id of this.#rejectedIds) if (!this.winners.has(id)) rejectedOnly += 1;
    return this.winners.size + rejectedOnly;
  }

  /** Distinct ids served (valid or rejected). */
  get ids(): number {
    return this.found - this.#rejectsWithoutId;
  }
}

/** One pass over the pages, from page 0 to an empty page. */
export class ListingPass {
  /** Ids this pass served; null on the first pass, whose ids are the union's. */
  readonly #served: Set<string> | null;
  /** Ids it served more than once. */
  readonly twice = new Set<string>();
  /** Ids no earlier pass served. */
  added = 0;
  /** Distinct ids it served, once it ended. */
  distinct = 0;
  /** Items it served, valid or not, duplicates included (the runaway bound counts them). */
  seen = 0;
  largestPage = 0;

  constructor(readonly number: number) {
    this.#served = number === 1 ? null : new Set();
  }

  /** An id served by this pass, told before the union adds it. */
  serve(id: string, union: ListingUnion): void {
    const known = union.has(id);
    if (!known) {
      this.added += 1;
      if (this.number > 1) union.foundLater += 1;
    }
    if (this.#served === null) {
      if (known) this.twice.add(id);
    } else if (this.#served.has(id)) {
      this.twice.add(id);
    } else {
      this.#served.add(id);
    }
  }

  end(union: ListingUnion): void {
    this.distinct = this.#served?.size ?? union.ids;
  }

  /** Every id of this pass was served by `other`. */
  within(other: ListingPass): boolean {
    if (other.#served === null) return this.added === 0;
    for (const id of this.#served ?? []) if (!other.#served.has(id)) return false;
    return true;
  }
}

/**
 * What a pass that reached an empty page says about the listing. settled: complete;
 * stable: the list did not change between this pass and the one before (it is complete as
 * the service lists it); again: page it once more.
 */
export type PassVerdict = 'settled' | 'stable' | 'again';

/** `declared`: the count the study's desc declares, when it applies (an unfiltered listing). */
export function judgePass(
  pass: ListingPass,
  previous: ListingPass | null,
  union: ListingUnion,
  declared: number | null,
): PassVerdict {
  if (pass.twice.size === 0 && !short(union, declared)) return 'settled';
  if (previous !== null && sameAs(pass, previous)) return 'stable';
  return 'again';
}

function short(union: ListingUnion, declared: number | null): boolean {
  return declared !== null && union.found < declared;
}

/** Two passes served the same ids, with the same ones twice. */
function sameAs(pass: ListingPass, previous: ListingPass): boolean {
  return (
    pass.added === 0 &&
    pass.distinct === previous.distinct &&
    pass.twice.size === previous.twice.size &&
    [...pass.twice].every((id) => previous.twice.has(id)) &&
    pass.within(previous)
  );
}

/** What showed that the list moved during a pass, for a warning. */
export function movementSign(pass: ListingPass, union: ListingUnion, declared: number | null): string {
  const signs: string[] = [];
  const [first] = pass.twice;
  if (first !== undefined) {
    const more = pass.twice.size - 1;
    signs.push(`response "${first}"${more > 0 ? ` and ${more} more` : ''} served twice`);
  }
  if (short(union, declared))
    signs.push(`${union.found} responses found of the ${declared} its desc declares`);
  return signs.join('; ');
}
