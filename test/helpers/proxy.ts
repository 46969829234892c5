/**
 * A loopback HTTP proxy in front of the sandbox or s3rver, for the tests that make a service
 * misbehave: each request goes to `handle`, which answers it itself or forwards it (the path as
 * received, so a "%2E" segment stays; a body, changed or not) and pipes the answer back, or
 * takes the answer's body to change or trickle it.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LoopbackProxy {
  url: string;
  close(): Promise<void>;
}

export interface ForwardOptions {
  /** The path asked of the target; else the one received. */
  path?: string;
  /** The headers sent; else the ones received, Host the target's (see keepHost). */
  headers?: IncomingHttpHeaders;
  /** The Host received goes on (a signed S3 request's signature covers it). */
  keepHost?: boolean;
  /** The body sent, read whole beforehand; else the request's body, piped. */
  body?: Buffer;
  /** Takes the target's answer; else it is piped back as it came. */
  onAnswer?: (answer: IncomingMessage) => void;
}

export interface Exchange {
  incoming: IncomingMessage;
  outgoing: ServerResponse;
  /** The request sent on to the target. */
  forward(options?: ForwardOptions): void;
  /** Answers the request here, its body unread. */
  answer(status: number, body: string | Buffer, headers?: Record<string, string>): void;
  /** The target's answer passed back as it came (what forward does without onAnswer). */
  pass(answer: IncomingMessage): void;
}

export async function startProxy(
  target: string,
  handle: (exchange: Exchange) => void,
): Promise<LoopbackProxy> {
  const upstream = new URL(target);
  const server = createServer((incoming, outgoing) => {
    const pass = (answer: IncomingMessage) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    };
    const forward = (options: ForwardOptions = {}) => {
      const headers = options.headers ?? incoming.headers;
      const sent = request(
        {
          hostname: upstream.hostname,
          port: upstream.port,
          method: incoming.method,
          path: options.path ?? incoming.url ?? '/',
          headers: options.keepHost ? headers : { ...headers, host: upstream.host },
        },
        (answer) => {
          answer.on('error', () => outgoing.destroy());
          (options.onAnswer ?? pass)(answer);
        },
      );
      sent.on('error', () => outgoing.destroy());
      if (options.body) sent.end(options.body);
      else incoming.pipe(sent);
    };
    const answer = (status: number, body: string | Buffer, headers: Record<string, string> = {}) => {
      incoming.resume();
      outgoing.writeHead(status, { 'content-type': 'application/json', ...headers });
      outgoing.end(body);
    };
    handle({ incoming, outgoing, forward, answer, pass });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A body read whole. */
export async function bodyOf(message: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of message) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
