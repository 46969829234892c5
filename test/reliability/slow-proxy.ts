/**
 * A loopback proxy in front of the sandbox's API that sends every body in small chunks
 * with pauses (a slow body, not just a late one), and can stall one body half-way for
 * longer than the client's timeout.
 */
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SlowProxyOptions {
  chunkBytes: number;
  pauseMs: number;
  /** Stall this long half-way through the first body whose path includes stallPath. */
  stallMs?: number;
  stallPath?: string;
}

export interface SlowProxy {
  url: string;
  /** Bodies stalled so far. */
  stalled(): number;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startSlowProxy(target: string, options: SlowProxyOptions): Promise<SlowProxy> {
  let stalls = 0;
  const shouldStall = (path: string) =>
    options.stallMs !== undefined && stalls === 0 && path.includes(options.stallPath ?? '');

  const server = createServer((incoming, outgoing) => {
    const path = incoming.url ?? '/';
    const upstream = request(
      new URL(path, target),
      { method: incoming.method, headers: { ...incoming.headers, host: new URL(target).host } },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('error', () => outgoing.destroy());
        answer.on('end', () => {
          const body = Buffer.concat(chunks);
          const stallAt = shouldStall(path) ? Math.floor(body.length / 2) : -1;
          if (stallAt >= 0) stalls += 1;
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          trickle(body, stallAt).catch(() => outgoing.destroy());
        });
      },
    );
    upstream.on('error', () => outgoing.destroy());
    incoming.pipe(upstream);

    async function trickle(body: Buffer, stallAt: number): Promise<void> {
      for (let at = 0; at < body.length; at += options.chunkBytes) {
        if (outgoing.destroyed) return;
        if (stallAt >= at && stallAt < at + options.chunkBytes) await sleep(options.stallMs ?? 0);
        if (outgoing.destroyed) return;
        outgoing.write(body.subarray(at, at + options.chunkBytes));
        await sleep(options.pauseMs);
      }
      outgoing.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stalled: () => stalls,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
