/**
 * A loopback proxy in front of the sandbox that answers chosen requests itself (a refused
 * key on one call, a hostile body for one record) and forwards everything else unchanged.
 */
import type { IncomingMessage } from 'node:http';
import { type LoopbackProxy, startProxy } from './proxy.ts';

export interface Intercepted {
  status: number;
  body: string | Buffer;
  headers?: Record<string, string>;
}

export interface InterceptingProxy extends LoopbackProxy {
  /** Requests answered by the proxy itself so far. */
  intercepted(): number;
}

export async function startInterceptingProxy(
  target: string,
  intercept: (request: IncomingMessage) => Intercepted | undefined,
): Promise<InterceptingProxy> {
  let count = 0;
  const proxy = await startProxy(target, ({ incoming, forward, answer }) => {
    const own = intercept(incoming);
    if (!own) return forward();
    count += 1;
    answer(own.status, own.body, own.headers);
  });
  return { ...proxy, intercepted: () => count };
}
