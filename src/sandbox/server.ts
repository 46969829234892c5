/**
 * What the three listeners share: the request log, one-shot overrides, faults and latency
 * in front of a handler that turns a request target into a Reply.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FaultDice, FaultRates, FaultSpec } from './faults.ts';

export type ListenerName = 'api' | 'storage' | 'stream';

export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface RequestLogEntry {
  listener: ListenerName;
  method: string;
  path: string;
  status: number;
  x_api_key: boolean;
}

/** Every request on every listener, in memory and (optionally) as JSON lines in a file. */
export class RequestLog {
  readonly entries: RequestLogEntry[] = [];
  private readonly file: WriteStream | undefined;

  constructor(path: string | undefined) {
    this.file = path ? createWriteStream(path, { flags: 'w' }) : undefined;
  }

  record(entry: RequestLogEntry): void {
    this.entries.push(entry);
    this.file?.write(`${JSON.stringify(entry)}\n`);
  }

  close(): Promise<void> {
    const file = this.file;
    if (!file) return Promise.resolve();
    return new Promise((resolve, reject) => {
      file.end((error?: Error | null) => (error ? reject(error) : resolve()));
    });
  }
}

export interface OverrideMatch {
  listener: ListenerName;
  pathIncludes?: string;
}

export interface OverrideReply {
  status: number;
  contentType?: string;
  body: string;
  headers?: Record<string, string>;
}

/** Canned replies for the next matching requests (malformed-payload and error tests). */
export class Overrides {
  private readonly pending: Array<{ match: OverrideMatch; reply: OverrideReply; remaining: number }> = [];

  add(match: OverrideMatch, reply: OverrideReply, times: number): void {
    this.pending.push({ match, reply, remaining: times });
  }

  take(listener: ListenerName, target: string): Reply | undefined {
    const at = this.pending.findIndex(
      (item) =>
        item.match.listener === listener &&
        (item.match.pathIncludes === undefined || target.includes(item.match.pathIncludes)),
    );
    const item = this.pending[at];
    if (!item) return undefined;
    item.remaining -= 1;
    if (item.remaining <= 0) this.pending.splice(at, 1);
    const { reply } = item;
    return {
      status: reply.status,
      headers: { 'content-type': reply.contentType ?? 'application/json; charset=utf-8', ...reply.headers },
      body: Buffer.from(reply.body),
    };
  }
}

export interface ListenerSetup {
  name: ListenerName;
  handle: (target: string, request: IncomingMessage) => Reply;
  dice: FaultDice;
  /** The rates of this listener under the current fault spec. */
  rates: (faults: FaultSpec) => FaultRates;
  /** Latency added to every request besides the fault spec's (the latencyMs option). */
  baseLatencyMs: number;
}

export interface Shared {
  log: RequestLog;
  overrides: Overrides;
  faults: () => FaultSpec;
  /** The service's clock: its Date header. Default: this machine's. */
  now?: () => number;
}

export interface Listener {
  server: Server;
  url: string;
  close(): Promise<void>;
}

export async function startListener(
  setup: ListenerSetup,
  shared: Shared,
  host: string,
  port: number,
): Promise<Listener> {
  const load = { inFlight: 0 };
  const server = createServer((request, response) => {
    serve(setup, shared, load, request, response).catch(() => response.destroy());
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    server,
    url: `http://${urlHost}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function serve(
  setup: ListenerSetup,
  shared: Shared,
  load: { inFlight: number },
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  request.resume();
  const target = request.url ?? '/';
  const method = request.method ?? 'GET';
  const record = (status: number) =>
    shared.log.record({
      listener: setup.name,
      method,
      path: target,
      status,
      x_api_key: request.headers['x-api-key'] !== undefined,
    });

  // The Date header says the service's time, as a real service's does: a sandbox whose clock
  // is set apart from this machine's (startTime, clock.set) is a service whose clock is off.
  response.setHeader('date', new Date(shared.now?.() ?? Date.now()).toUTCString());
  const override = shared.overrides.take(setup.name, target);
  if (override) {
    send(response, method, override);
    record(override.status);
    return;
  }
  const faults = shared.faults();
  const rates = setup.rates(faults);
  if (rates.maxInFlight > 0 && load.inFlight >= rates.maxInFlight) {
    const reply = faultReply('429', faults.retryAfterSeconds);
    send(response, method, reply);
    record(reply.status);
    return;
  }
  load.inFlight += 1;
  try {
    await serveWithFaults(setup, faults, rates, request, response, record);
  } finally {
    load.inFlight -= 1;
  }
}

async function serveWithFaults(
  setup: ListenerSetup,
  faults: FaultSpec,
  rates: FaultRates,
  request: IncomingMessage,
  response: ServerResponse,
  record: (status: number) => void,
): Promise<void> {
  const target = request.url ?? '/';
  const method = request.method ?? 'GET';
  const fault = setup.dice.draw(rates);
  const latency = setup.baseLatencyMs + rates.latencyMs;
  if (latency > 0) await new Promise((resolve) => setTimeout(resolve, latency));
  if (response.destroyed) return;

  if (fault === 'reset') {
    record(0);
    request.socket.destroy();
    return;
  }
  if (fault === '500' || fault === '503' || fault === '429') {
    const reply = faultReply(fault, faults.retryAfterSeconds);
    send(response, method, reply);
    record(reply.status);
    return;
  }
  const reply =
    method === 'GET' || method === 'HEAD'
      ? setup.handle(target, request)
      : jsonReply(405, { error: `method ${method} not allowed` }, { allow: 'GET, HEAD' });
  if (fault === 'truncate' && method === 'GET' && reply.body.length > 1) {
    truncate(response, reply);
  } else {
    send(response, method, reply);
  }
  record(reply.status);
}

function send(response: ServerResponse, method: string, reply: Reply): void {
  response.writeHead(reply.status, { ...reply.headers, 'content-length': String(reply.body.length) });
  response.end(method === 'HEAD' ? undefined : reply.body);
}

/** Full Content-Length, half the body, then the connection dies. */
function truncate(response: ServerResponse, reply: Reply): void {
  response.writeHead(reply.status, { ...reply.headers, 'content-length': String(reply.body.length) });
  response.write(reply.body.subarray(0, Math.floor(reply.body.length / 2)), () => {
    response.socket?.destroy();
  });
}

function faultReply(fault: '500' | '503' | '429', retryAfterSeconds: number): Reply {
  if (fault === '429') {
    return jsonReply(
      429,
      { error: 'rate limit exceeded' },
      { 'retry-after': String(Math.ceil(retryAfterSeconds)) },
    );
  }
  return jsonReply(Number(fault), {
    error: fault === '500' ? 'internal server error' : 'service unavailable',
  });
}

export function jsonReply(status: number, payload: unknown, headers: Record<string, string> = {}): Reply {
  return {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
    body: Buffer.from(JSON.stringify(payload)),
  };
}
