/**
 * A loopback proxy in front of the sandbox's API that sends every body in small chunks
 * with pauses (a slow body, not just a late one), and can stall one body half-way for
 * longer than the client's timeout.
 */
import { bodyOf, type LoopbackProxy, startProxy } from '../helpers/proxy.ts';

export interface SlowProxyOptions {
  chunkBytes: number;
  pauseMs: number;
  /** Stall this long half-way through the first body whose path includes stallPath. */
  stallMs?: number;
  stallPath?: string;
}

export interface SlowProxy extends LoopbackProxy {
  /** Bodies stalled so far. */
  stalled(): number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startSlowProxy(target: string, options: SlowProxyOptions): Promise<SlowProxy> {
  let stalls = 0;
  const shouldStall = (path: string) =>
    options.stallMs !== undefined && stalls === 0 && path.includes(options.stallPath ?? '');

  const proxy = await startProxy(target, ({ incoming, outgoing, forward }) => {
    const path = incoming.url ?? '/';
    forward({
      onAnswer: (answer) => {
        bodyOf(answer)
          .then((body) => {
            const stallAt = shouldStall(path) ? Math.floor(body.length / 2) : -1;
            if (stallAt >= 0) stalls += 1;
            outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
            return trickle(body, stallAt);
          })
          .catch(() => outgoing.destroy());
      },
    });

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
  return { ...proxy, stalled: () => stalls };
}
