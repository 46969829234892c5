/**
 * A loopback proxy in front of the sandbox's API that misbehaves on the requests a test
 * picks: resets the connection, streams an endless body, trickles one byte at a time, or
 * goes away altogether (stops listening, so later connections are refused).
 */
import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type Misbehaviour = 'pass' | 'reset' | 'endless' | 'trickle' | 'gone';

export interface MisbehavingServer {
  url: string;
  /** Requests that misbehaved so far, by kind. */
  counts: Record<Misbehaviour, number>;
  close(): Promise<void>;
}

/** `choose` is asked for every request, with the path and how many requests came before it. */
export async function startMisbehavingServer(
  target: string,
  choose: (path: string, index: number) => Misbehaviour,
  options: { trickleMs?: number } = {},
): Promise<MisbehavingServer> {
  const counts: Record<Misbehaviour, number> = { pass: 0, reset: 0, endless: 0, trickle: 0, gone: 0 };
  const sockets = new Set<Socket>();
  let index = 0;
  let gone = false;

  const server = createServer((incoming, outgoing) => {
    const path = incoming.url ?? '/';
    const behaviour = gone ? 'gone' : choose(path, index++);
    counts[behaviour] += 1;
    switch (behaviour) {
      case 'reset':
        incoming.socket.destroy();
        return;
      case 'gone':
        goAway();
        return;
      case 'endless':
        endless(outgoing);
        return;
      case 'trickle':
        trickle(outgoing, options.trickleMs ?? 200);
        return;
      case 'pass':
        pass();
        return;
    }

    function pass(): void {
      const upstream = request(
        new URL(path, target),
        { method: incoming.method, headers: { ...incoming.headers, host: new URL(target).host } },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
        },
      );
      upstream.on('error', () => outgoing.destroy());
      incoming.pipe(upstream);
    }
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  function goAway(): void {
    gone = true;
    server.close();
    for (const socket of sockets) socket.destroy();
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    close: () =>
      new Promise<void>((resolve) => {
        if (!server.listening) {
          resolve();
          return;
        }
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A JSON array that never ends, sent as fast as the client reads it. */
function endless(outgoing: ServerResponse): void {
  outgoing.writeHead(200, { 'content-type': 'application/json' });
  const chunk = Buffer.from(`[${'{"id":"x"},'.repeat(6000)}`);
  const more = () => {
    while (!outgoing.destroyed && outgoing.write(chunk)) {
      // keep writing until the socket's buffer is full
    }
    if (!outgoing.destroyed) outgoing.once('drain', more);
  };
  outgoing.on('close', () => outgoing.removeAllListeners('drain'));
  more();
}

/** One byte every `everyMs`, forever: never idle long enough for an idle timeout. */
function trickle(outgoing: ServerResponse, everyMs: number): void {
  outgoing.writeHead(200, { 'content-type': 'application/json' });
  outgoing.write('[');
  const timer = setInterval(() => {
    if (outgoing.destroyed) clearInterval(timer);
    else outgoing.write(' ');
  }, everyMs);
  outgoing.on('close', () => clearInterval(timer));
}
