import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient, type RetryInfo } from '../../src/api/client.ts';
import type { SingleResponse } from '../../src/api/resources.ts';
import { AuthError, HttpError, NetworkError, PayloadError } from '../../src/errors.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { sandboxClient } from '../helpers/extract.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 11, studies: 2, responses: 5 });
});
afterAll(async () => {
  await sandbox?.close();
});

function firstStudy() {
  const study = sandbox.studies()[0];
  if (!study) throw new Error('sandbox has no study');
  return study;
}

async function caught(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

describe('api client against the sandbox', () => {
  it('lists studies and sends the key', async () => {
    const client = sandboxClient(sandbox);
    const fetched = await client.listStudies();
    expect(fetched.status).toBe(200);
    expect(fetched.payload).toEqual(sandbox.studies());
    expect(fetched.url).toBe(`${sandbox.base_url}/api/public/list_surveys`);
    expect(fetched.bytes).toBeGreaterThan(0);
    client.close();
  });

  it('a wrong key is an AuthError naming the environment variable, never the key', async () => {
    const key = 'wrong-secret-key-0123456789';
    const client = sandboxClient(sandbox, { apiKey: key, apiKeyEnv: 'MY_STUDY_KEY' });
    const before = sandbox.requests.length;
    const error = await caught(client.listStudies());
    expect(error).toBeInstanceOf(AuthError);
    expect(error.message).toContain('MY_STUDY_KEY');
    expect(error.message).toContain('list_surveys');
    expect(error.message).not.toContain(key);
    expect(JSON.stringify((error as AuthError).context)).not.toContain(key);
    expect((error as AuthError).context.status).toBe(401);
    // Not retried.
    expect(sandbox.requests.length - before).toBe(1);
    client.close();
  });

  it('an unknown study link_id says it may have been renamed and how to list studies', async () => {
    const client = sandboxClient(sandbox);
    const error = await caught(
      client.listResponses('no-such-study', { page: 0, perPage: 10, includeInProgress: true }),
    );
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).code).toBe('E_NOT_FOUND');
    expect(error.message).toContain('"no-such-study"');
    expect(error.message).toContain('renamed');
    expect(error.message).toContain('study-export studies');
    // The URL in the message and context has no query string.
    expect(error.message).not.toContain('per_page');
    expect((error as HttpError).context.url).toBe(`${sandbox.base_url}/api/public/responses/no-such-study`);
    client.close();
  });

  it('an unknown response id names the response and the study', async () => {
    const client = sandboxClient(sandbox);
    const study = firstStudy();
    const error = await caught(client.getResponse(study.link_id, 'missing-response'));
    expect(error).toBeInstanceOf(HttpError);
    expect(error.message).toContain('"missing-response"');
    expect(error.message).toContain(`"${study.link_id}"`);
    expect((error as HttpError).context).toMatchObject({
      response: 'missing-response',
      study: study.link_id,
    });
    client.close();
  });

  it('a 400 names the operation and carries the server message', async () => {
    const client = sandboxClient(sandbox);
    const study = firstStudy();
    sandbox.overrideNext(
      { listener: 'api', pathIncludes: '/responses/' },
      { status: 400, body: JSON.stringify({ error: 'per_page is out of range' }) },
    );
    const error = await caught(
      client.listResponses(study.link_id, { page: 0, perPage: 10, includeInProgress: true }),
    );
    expect((error as HttpError).code).toBe('E_BAD_REQUEST');
    expect(error.message).toContain('list_responses');
    expect(error.message).toContain('per_page is out of range');
    client.close();
  });

  it('caps a huge Retry-After, counts it, and finishes', async () => {
    const retries: RetryInfo[] = [];
    const client = sandboxClient(sandbox, { maxRetryAfterMs: 20, onRetry: (info) => retries.push(info) });
    sandbox.overrideNext(
      { listener: 'api', pathIncludes: 'list_surveys' },
      { status: 429, body: '{"error":"slow down"}', headers: { 'retry-after': '3600' } },
    );
    const fetched = await client.listStudies();
    expect(fetched.status).toBe(200);
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ reason: '429', delayMs: 20, retryAfterCapped: true });
    const snapshot = client.counters.snapshot();
    expect(snapshot.retry_after_capped).toBe(1);
    expect(snapshot.retries).toEqual({ '429': 1 });
    expect(snapshot.requests.list_surveys).toEqual({ '200': 1, '429': 1 });
    client.close();
  });

  it('retries a non-JSON body, then gives a PayloadError', async () => {
    const client = sandboxClient(sandbox, { retries: 2 });
    sandbox.overrideNext(
      { listener: 'api', pathIncludes: 'list_surveys' },
      { status: 200, contentType: 'text/html', body: '<html>maintenance</html>' },
      3,
    );
    const error = await caught(client.listStudies());
    expect(error).toBeInstanceOf(PayloadError);
    expect(error.message).toContain('not JSON');
    expect(client.counters.snapshot().retries).toEqual({ invalid_json: 2 });
    // A non-JSON body that is retried once and then fixed is fine.
    sandbox.overrideNext(
      { listener: 'api', pathIncludes: 'list_surveys' },
      { status: 200, body: '[{"id": "trunc' },
    );
    expect((await client.listStudies()).payload).toEqual(sandbox.studies());
    client.close();
  });

  it('gives up on persistent 503s with E_RETRIES_EXHAUSTED', async () => {
    const client = sandboxClient(sandbox, { retries: 3 });
    sandbox.overrideNext({ listener: 'api', pathIncludes: 'list_surveys' }, { status: 503, body: '{}' }, 4);
    const error = await caught(client.listStudies());
    expect((error as HttpError).code).toBe('E_RETRIES_EXHAUSTED');
    expect(error.message).toContain('503');
    expect(client.counters.snapshot().requests.list_surveys).toEqual({ '503': 4 });
    client.close();
  });

  it('does not follow a redirect to another host with the key', async () => {
    const client = sandboxClient(sandbox);
    const storageBefore = sandbox.requests.filter((r) => r.listener === 'storage').length;
    sandbox.overrideNext(
      { listener: 'api', pathIncludes: 'list_surveys' },
      { status: 302, body: '', headers: { location: `${sandbox.storage_url}/steal?sig=secret` } },
    );
    const error = await caught(client.listStudies());
    expect((error as HttpError).code).toBe('E_HTTP');
    expect(error.message).toContain('another host');
    expect(error.message).not.toContain('sig=secret');
    expect(sandbox.requests.filter((r) => r.listener === 'storage').length).toBe(storageBefore);
    client.close();
  });

  it('follows a redirect that stays on the API host', async () => {
    const client = sandboxClient(sandbox);
    sandbox.overrideNext(
      { listener: 'api', pathIncludes: 'list_surveys?moved' },
      { status: 200, body: '[]' },
    );
    sandbox.overrideNext(
      { listener: 'api', pathIncludes: 'list_surveys' },
      { status: 302, body: '', headers: { location: '/api/public/list_surveys?moved' } },
    );
    const fetched = await client.listStudies();
    expect(fetched.payload).toEqual([]);
    const last = sandbox.requests.at(-1);
    expect(last).toMatchObject({ path: '/api/public/list_surveys?moved', x_api_key: true });
    client.close();
  });

  it('encodes hostile ids into single path segments', async () => {
    const linkId = 'wave/../1 ✓ ?x=1#frag%41';
    const responseIds = [
      'a/b',
      'x/../../list_surveys',
      'ünïcødé-回答',
      'r'.repeat(300),
      '%2F?#',
      '.',
      '..',
      'CON',
    ];
    sandbox.addStudy({ link_id: linkId, responses: 0, responseIds });
    const client = sandboxClient(sandbox);
    const page = await client.listResponses(linkId, { page: 0, perPage: 100, includeInProgress: true });
    const elements = page.elements!;
    const ids = Array.from({ length: elements.length }, (_, index) => {
      const element = elements.element(index);
      return element.ok ? (element.value as { id: string }).id : element.text;
    });
    expect(ids.sort()).toEqual([...responseIds].sort());
    for (const id of responseIds) {
      const detail = (await client.getResponse(linkId, id)).payload as SingleResponse;
      expect(detail.id).toBe(id);
      expect(detail.survey).toBe(linkId);
    }
    await expect(client.getResponse(linkId, '')).rejects.toThrow(/cannot be used as a URL path segment/);
    client.close();
  });

  it('an unreachable service is a NetworkError naming the URL and the reason', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const client = createApiClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: 'k-secret',
      apiKeyEnv: 'STUDY_API_KEY',
      concurrency: 2,
      timeoutMs: 2_000,
      retries: 2,
      backoff: { baseMs: 1, maxMs: 5 },
    });
    const error = await caught(client.listStudies());
    expect(error).toBeInstanceOf(NetworkError);
    expect(error.message).toContain(`http://127.0.0.1:${port}/api/public/list_surveys`);
    expect(error.message).toContain('ECONNREFUSED');
    expect(error.message).not.toContain('k-secret');
    expect(client.counters.snapshot().requests.list_surveys).toEqual({ ECONNREFUSED: 3 });
    client.close();
  });

  it('lowers concurrency on sustained 429s and recovers it afterwards', async () => {
    const client = sandboxClient(sandbox, {
      concurrency: 8,
      retries: 30,
      maxRetryAfterMs: 1,
      adaptive: { threshold: 3, windowMs: 60_000, recoverAfter: 5 },
    });
    const study = firstStudy();
    const ids = sandbox.responses(study.link_id).map((r) => r.id);
    const burst = () =>
      Promise.all(
        Array.from({ length: 40 }, (_, i) => client.getResponse(study.link_id, ids[i % ids.length]!)),
      );
    try {
      sandbox.setFaults('429=0.5');
      await burst();
      const throttled = client.counters.snapshot().concurrency;
      expect(throttled.changes.some((c) => c.reason === 'rate_limited')).toBe(true);
      expect(Math.min(...throttled.changes.map((c) => c.to))).toBeLessThan(8);
      sandbox.setFaults(null);
      await burst();
      await burst();
    } finally {
      sandbox.setFaults(null);
    }
    const recovered = client.counters.snapshot().concurrency;
    expect(recovered.current).toBe(8);
    expect(client.limit.concurrency).toBe(8);
    expect(recovered.changes.at(-1)).toMatchObject({ to: 8, reason: 'recovered' });
    client.close();
  });

  it('a service slower than the response timeout is retried, then a NetworkError', async () => {
    const slow = await startSandbox({ seed: 11, studies: 1, responses: 1, latencyMs: 400 });
    const client = sandboxClient(slow, { timeoutMs: 50, retries: 1 });
    try {
      const error = await caught(client.listStudies());
      expect(error).toBeInstanceOf(NetworkError);
      expect(error.message).toContain('ETIMEDOUT');
      expect(client.counters.snapshot().requests.list_surveys).toEqual({ ETIMEDOUT: 2 });
    } finally {
      client.close();
      await slow.close();
    }
  });

  it('reads gzip and brotli answers, and caps a body by its decompressed size', async () => {
    const studies = JSON.stringify([{ id: 's1', link_id: 'one', title: 't', created_at: null, desc: null }]);
    // A small compressed body that inflates past the cap: a "zip bomb".
    const bomb = gzipSync(Buffer.alloc(3 * 2 ** 20, 0x20));
    const server = createServer((req, res) => {
      const accepts = String(req.headers['accept-encoding'] ?? '');
      if (req.url?.includes('bomb')) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(bomb);
      } else if (accepts.includes('br') && req.headers['x-api-key'] === 'br') {
        res.writeHead(200, { 'content-encoding': 'br' }).end(brotliCompressSync(studies));
      } else {
        res.writeHead(200, { 'content-encoding': 'gzip' }).end(gzipSync(studies));
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const options = { apiKeyEnv: 'K', concurrency: 1, timeoutMs: 2_000, retries: 0 };
    try {
      for (const apiKey of ['gzip', 'br']) {
        const client = createApiClient({ ...options, baseUrl, apiKey });
        expect((await client.listStudies()).payload).toEqual(JSON.parse(studies));
        client.close();
      }
      const capped = createApiClient({
        ...options,
        baseUrl: `${baseUrl}/bomb`,
        apiKey: 'k',
        maxBodyBytes: 2 ** 20,
      });
      const error = await caught(capped.listStudies());
      expect(bomb.length).toBeLessThan(2 ** 20);
      expect(error.message).toMatch(/larger than source\.max_body_mib/);
      expect(capped.counters.snapshot().requests.list_surveys).toEqual({ too_large: 1 });
      capped.close();
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
  it("sends the next request before the caller's work on an answer begins", async () => {
    // The server runs on a thread of its own, so it notes when each request arrives even while
    // the test's event loop is busy.
    const server = new Worker(
      `const { createServer } = require('node:http');
      const { parentPort } = require('node:worker_threads');
      const arrivals = [];
      const server = createServer((req, res) => {
        arrivals.push(Date.now());
        res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
      });
      server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
      parentPort.on('message', () => parentPort.postMessage(arrivals));`,
      { eval: true },
    );
    const port = await new Promise<number>((resolve) => server.once('message', resolve));
    const client = createApiClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: 'k',
      apiKeyEnv: 'K',
      concurrency: 1,
      timeoutMs: 2_000,
      retries: 0,
    });
    try {
      let busyFrom = 0;
      // One request in flight: the second waits for the first's slot. The caller of the first
      // then holds the event loop for 400 ms, as a long transform would.
      const first = client.listStudies().then(() => {
        busyFrom = Date.now();
        while (Date.now() - busyFrom < 400);
      });
      await Promise.all([first, client.listStudies()]);
      server.postMessage('arrivals');
      const arrivals = await new Promise<number[]>((resolve) => server.once('message', resolve));
      expect(arrivals).toHaveLength(2);
      // Sent once the caller was done, it would arrive 400 ms into the work or later.
      expect((arrivals[1] as number) - busyFrom).toBeLessThan(200);
    } finally {
      client.close();
      await server.terminate();
    }
  });
});
