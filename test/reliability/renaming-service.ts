/**
 * A loopback service in front of the sandbox's API that serves ids the sandbox would not: it
 * gives studies the permanent ids a test picks (ids that differ only by case, or that look like
 * another id's sanitised name), and serves two of its studies under one link_id. Everything
 * else passes through; media links point at the sandbox's own hosts, as they always do.
 *
 * Two studies listed under one link_id share the path of their responses, so the first listing
 * page asked for under it is the first study's, the next one the second's (a run lists each
 * study from its first page once); details are served by whichever of the two has the response.
 */
import type { Sandbox } from '../../src/sandbox/index.ts';
import { bodyOf, type LoopbackProxy, startProxy } from '../helpers/proxy.ts';

export type RenamingService = LoopbackProxy;

export interface Renames {
  /** Sandbox study id -> the permanent id served instead. */
  ids?: Record<string, string>;
  /** Two sandbox link_ids served as one. */
  shared?: { linkId: string; from: [string, string] };
}

export async function startRenamingService(sandbox: Sandbox, renames: Renames): Promise<RenamingService> {
  const shared = renames.shared;
  let firstPages = 0;
  return startProxy(sandbox.base_url, ({ incoming, outgoing, forward, pass }) => {
    const url = new URL(incoming.url ?? '/', 'http://x');
    const segments = (incoming.url ?? '/').split('?')[0]!.split('/').map(decodeURIComponent);
    let target = incoming.url ?? '/';
    let rewrite: ((body: unknown) => unknown) | null = null;
    if (url.pathname === '/api/public/list_surveys') {
      rewrite = (body) =>
        (body as Record<string, unknown>[]).map((study) => ({
          ...study,
          id: renames.ids?.[study.id as string] ?? study.id,
          link_id: shared?.from.includes(study.link_id as string) ? shared.linkId : study.link_id,
        }));
    } else if (shared && segments[4] === shared.linkId) {
      let from = shared.from[0];
      if (segments.length === 5 && url.searchParams.get('page') === '0') {
        from = shared.from[firstPages++ % 2] as string;
      } else if (segments.length === 6) {
        const id = segments[5] as string;
        from = shared.from.find((link) => sandbox.responses(link).some((r) => r.id === id)) ?? from;
        rewrite = (body) => ({ ...(body as object), survey: shared.linkId });
      }
      target = target.replace(`/${encodeURIComponent(shared.linkId)}`, `/${encodeURIComponent(from)}`);
    }
    // Uncompressed, to rewrite; the path as received (a URL would drop a "%2E" segment).
    const { 'accept-encoding': _encoding, ...headers } = incoming.headers;
    forward({
      path: target,
      headers,
      onAnswer: (answer) => {
        const change = rewrite;
        if (!change || answer.statusCode !== 200) return pass(answer);
        bodyOf(answer).then(
          (body) => {
            const text = JSON.stringify(change(JSON.parse(body.toString('utf8'))));
            outgoing.writeHead(200, { 'content-type': 'application/json' });
            outgoing.end(text);
          },
          () => outgoing.destroy(),
        );
      },
    });
  });
}
