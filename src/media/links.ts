/** The signed links of one response, renewed once for all its jobs when refused or old. */
import type { SingleResponse } from '../api/resources.ts';
import { MediaError } from '../errors.ts';
import type { MediaKind } from '../records.ts';
import type { SignedLink } from './download.ts';
import { mediaUrl } from './jobs.ts';

/**
 * The current links of one response. Jobs that find their link refused or old ask here;
 * one refresh serves every job of the response (a job whose link was already renewed by
 * another gets the new one without another API call).
 */
export class ResponseLinks {
  private inflight: Promise<void> | null = null;

  constructor(
    private detail: SingleResponse,
    private fetchedAt: number,
    private readonly refreshDetail: () => Promise<SingleResponse>,
    private readonly now: () => number,
    private readonly counted: () => void,
  ) {}

  current(turn: number, kind: MediaKind): SignedLink {
    const url = mediaUrl(this.detail.transcript[turn - 1], kind);
    if (!url) throw new MediaError(`the refreshed response has no ${kind} at turn ${turn} any more`);
    return { url, issuedAt: this.fetchedAt };
  }

  async fresh(stale: SignedLink, turn: number, kind: MediaKind): Promise<SignedLink> {
    const known = this.current(turn, kind);
    if (known.url !== stale.url) return known;
    this.inflight ??= this.renew().finally(() => {
      this.inflight = null;
    });
    await this.inflight;
    return this.current(turn, kind);
  }

  private async renew(): Promise<void> {
    this.counted();
    const detail = await this.refreshDetail();
    this.detail = detail;
    this.fetchedAt = this.now();
  }
}
