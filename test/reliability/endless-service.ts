/**
 * A schema-valid service on loopback whose listing never ends: every page holds 1 to 5 new
 * responses, whatever `page` is asked for. Details are minimal valid single responses.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface EndlessService {
  url: string;
  /** List pages served so far. */
  pages(): number;
  close(): Promise<void>;
}

export async function startEndlessService(options: { desc: string; seed?: number }): Promise<EndlessService> {
  let pages = 0;
  let next = 0;
  let random = options.seed ?? 1;
  // A small deterministic generator (xorshift), so a failure can be replayed.
  const pageSize = () => {
    random ^= random << 13;
    random ^= random >>> 17;
    random ^= random << 5;
    return 1 + (Math.abs(random) % 5);
  };
  const study = {
    id: 'study-endless',
    link_id: 'endless',
    title: 'Endless',
    created_at: '2026-01-01T00:00:00Z',
    desc: options.desc,
  };
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://loopback');
    const send = (body: unknown) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    if (url.pathname === '/api/public/list_surveys') return send([study]);
    const detail = /^\/api\/public\/responses\/endless\/([^/]+)$/.exec(url.pathname);
    if (detail)
      return send({ id: decodeURIComponent(detail[1] as string), survey: 'Endless', transcript: [] });
    if (url.pathname === '/api/public/responses/endless') {
      pages += 1;
      const items = Array.from({ length: pageSize() }, () => {
        const id = `r-${next++}`;
        return {
          id,
          created_at: '2026-01-02T00:00:00Z',
          updated_at: '2026-01-02T00:00:00Z',
          answers: { Summary: `summary of ${id}` },
          attributes: {},
          short_transcript: '',
        };
      });
      return send(items);
    }
    response.writeHead(404, { 'content-type': 'application/json' });
    response.end('{"error":"not found"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    pages: () => pages,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
