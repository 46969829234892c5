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
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Sandbox } from '../../src/sandbox/index.ts';

export interface RenamingService {
  url: string;
  close(): Promise<void>;
}

export interface Renames {
  /** Sandbox study id -> the permanent id served instead. */
  ids?: Record<string, string>;
  /** Two sandbox link_ids served as one. */
  shared?: { linkId: string; from: [string, string] };
}

export async function startRenamingService(sandbox: Sandbox, renames: Renames): Promise<RenamingService> {
  const shared = renames.shared;
  let firstPages = 0;
  const server = createServer((incoming, outgoing) => {
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
    const base = new URL(sandbox.base_url);
    // Uncompressed, to rewrite; the path as received (a URL would drop a "%2E" segment).
    const { 'accept-encoding': _encoding, ...headers } = incoming.headers;
    const upstream = request(
      {
        hostname: base.hostname,
        port: base.port,
        path: target,
        method: incoming.method,
        headers: { ...headers, host: base.host },
      },
      (answer) => {
        if (!rewrite || answer.statusCode !== 200) {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
          return;
        }
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          const text = JSON.stringify(rewrite(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
          outgoing.writeHead(200, { 'content-type': 'application/json' });
          outgoing.end(text);
        });
      },
    );
    upstream.on('error', () => outgoing.destroy());
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
