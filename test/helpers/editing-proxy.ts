/**
 * A loopback proxy in front of the sandbox that changes the service between two page
 * requests of a listing: `edit` runs when a listing page is asked for, before the sandbox
 * answers it, so the page served already shows the change (a response edited, added or
 * deleted while a client pages the list).
 */
import type { Sandbox } from '../../src/sandbox/index.ts';
import { type InterceptingProxy, startInterceptingProxy } from './intercepting-proxy.ts';

export interface PageRequest {
  linkId: string;
  page: number;
  updatedSince: string | null;
  /** Listing page requests of this link_id the proxy saw before this one. */
  before: number;
}

export interface EditingProxy extends InterceptingProxy {
  /** Listing page requests seen, every study together. */
  pages(): number;
  /** The sandbox behind it, as a run's pipeline sees it: this proxy's address, the sandbox's key. */
  service: Pick<Sandbox, 'base_url' | 'api_key'>;
}

export async function startEditingProxy(
  sandbox: Sandbox,
  edit: (request: PageRequest) => void,
): Promise<EditingProxy> {
  const seen = new Map<string, number>();
  let pages = 0;
  const proxy = await startInterceptingProxy(sandbox.base_url, (incoming) => {
    const url = new URL(incoming.url ?? '/', 'http://loopback');
    const listing = /^\/api\/public\/responses\/([^/]+)$/.exec(url.pathname);
    if (!listing) return undefined;
    const linkId = decodeURIComponent(listing[1] as string);
    const before = seen.get(linkId) ?? 0;
    seen.set(linkId, before + 1);
    pages += 1;
    edit({
      linkId,
      page: Number(url.searchParams.get('page') ?? '0'),
      updatedSince: url.searchParams.get('updated_since'),
      before,
    });
    return undefined;
  });
  return { ...proxy, pages: () => pages, service: { base_url: proxy.url, api_key: sandbox.api_key } };
}
