/** httpGet against a loopback server: redirects, what is sent, idle timeout and deadline. */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { finished } from 'node:stream/promises';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type GetOptions, httpGet, RequestTimeoutError } from '../../src/http/get.ts';

let server: Server;
let base: string;
const seen: { path: string; headers: IncomingHttpHeaders }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', headers: req.headers });
    const url = req.url ?? '';
    if (url.startsWith('/loop')) {
      res.writeHead(302, { location: '/loop' }).end();
    } else if (url.startsWith('/with-user')) {
      const port = (server.address() as AddressInfo).port;
      res.writeHead(307, { location: `http://user:secret@127.0.0.1:${port}/file` }).end();
    } else if (url.startsWith('/stall')) {
      res.writeHead(200, { 'content-length': '10' });
      res.write('hello'); // and nothing more
    } else if (url.startsWith('/trickle')) {
      res.writeHead(200, { 'content-length': '1000' });
      const timer = setInterval(() => res.write('x'), 20);
      res.on('close', () => clearInterval(timer));
    } else {
      res.writeHead(200, { 'content-length': '5' }).end('hello');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  seen.length = 0;
});

const timeouts = { timeoutMs: 2_000, deadlineMs: 10_000 };
/** As the media downloads call it: one header, every redirect followed. */
const mediaGet = (url: string, limits: typeof timeouts) =>
  httpGet(url, { ...limits, headers: { 'user-agent': 'study-export media' }, followRedirect: () => true });

async function bodyError(path: string, options: typeof timeouts): Promise<unknown> {
  const response = await mediaGet(`${base}${path}`, options);
  response.body.resume();
  return finished(response.body).then(
    () => null,
    (error: unknown) => error,
  );
}

describe('httpGet', () => {
  it('follows a redirect without user info and sends only a user agent', async () => {
    const response = await mediaGet(`${base}/with-user`, timeouts);
    const chunks: Buffer[] = [];
    for await (const chunk of response.body) chunks.push(chunk as Buffer);
    expect(response.status).toBe(200);
    expect(Buffer.concat(chunks).toString()).toBe('hello');
    expect(seen.map((s) => s.path)).toEqual(['/with-user', '/file']);
    for (const { headers } of seen) {
      expect(headers.authorization).toBeUndefined();
      expect(headers['x-api-key']).toBeUndefined();
      expect(headers['user-agent']).toBe('study-export media');
    }
  });

  it('gives up after five redirects', async () => {
    await expect(mediaGet(`${base}/loop`, timeouts)).rejects.toThrow(/more than 5 redirects/);
    expect(seen).toHaveLength(6);
  });

  it('refuses a protocol other than http and https', async () => {
    await expect(mediaGet('ftp://127.0.0.1/file', timeouts)).rejects.toThrow(/unsupported protocol/);
  });

  it('fails a body that stops arriving with an idle timeout', async () => {
    const error = await bodyError('/stall', { timeoutMs: 200, deadlineMs: 10_000 });
    expect(error).toBeInstanceOf(RequestTimeoutError);
    expect(error).toMatchObject({ event: 'idle', code: 'ETIMEDOUT' });
  });

  it('fails a body that trickles past the deadline', async () => {
    const error = await bodyError('/trickle', { timeoutMs: 2_000, deadlineMs: 300 });
    expect(error).toBeInstanceOf(RequestTimeoutError);
    expect(error).toMatchObject({ event: 'deadline' });
  });

  it('answers a redirect it may not follow with the redirect itself, and sends the given headers', async () => {
    const options: GetOptions = {
      ...timeouts,
      headers: { 'x-api-key': 'k' },
      followRedirect: (from, to) => from.host === to.host && to.pathname !== '/file',
    };
    const response = await httpGet(`${base}/with-user`, options);
    response.body.resume();
    expect(response.status).toBe(307);
    expect(seen.map((s) => s.path)).toEqual(['/with-user']);
    expect(seen[0]?.headers['x-api-key']).toBe('k');
  });
});
