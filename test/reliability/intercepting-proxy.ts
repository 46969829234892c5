/**
 * A loopback proxy in front of the sandbox that answers chosen requests itself (a refused
 * key on one call, a hostile body for one record) and forwards everything else unchanged.
 */
import { createServer, type IncomingMessage, request } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Intercepted {
  status: number;
  body: string | Buffer;
  headers?: Record<string, string>;
}

export interface InterceptingProxy {
  url: string;
  /** Requests answered by the proxy itself so far. */
  intercepted(): number;
  close(): Promise<void>;
}

export async function startInterceptingProxy(
  target: string,
  intercept: (request: IncomingMessage) => Intercepted | undefined,
): Promise<InterceptingProxy> {
  let count = 0;
  const server = createServer((incoming, outgoing) => {
    const own = intercept(incoming);
    if (own) {
      count += 1;
      incoming.resume();
      outgoing.writeHead(own.status, { 'content-type': 'application/json', ...own.headers });
      outgoing.end(own.body);
      return;
    }
    const upstream = request(
      new URL(incoming.url ?? '/', target),
      { method: incoming.method, headers: { ...incoming.headers, host: new URL(target).host } },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
        answer.on('error', () => outgoing.destroy());
      },
    );
    upstream.on('error', () => outgoing.destroy());
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    intercepted: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A single-response request: /api/public/responses/<link_id>/<response_id>. */
export function isDetailPath(path: string | undefined): boolean {
  return /^\/api\/public\/responses\/[^/?]+\/[^/?]+/.test(path ?? '');
}
