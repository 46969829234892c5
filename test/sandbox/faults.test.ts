import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.ts';
import { parseFaults, type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { api, type Detail, studyOf } from '../helpers/sandbox.ts';

type Outcome = 'ok' | '500' | '503' | '429' | 'reset' | 'truncate';

/** What a client sees for one request: a status, a dropped connection or a cut body. */
async function outcome(url: string, apiKey?: string): Promise<{ kind: Outcome; retryAfter: string | null }> {
  let response: Response;
  try {
    // A fresh connection per request, so that a reset only affects this one.
    response = await fetch(url, {
      headers: { connection: 'close', ...(apiKey ? { 'x-api-key': apiKey } : {}) },
    });
  } catch {
    return { kind: 'reset', retryAfter: null };
  }
  try {
    await response.arrayBuffer();
  } catch {
    return { kind: 'truncate', retryAfter: null };
  }
  const kind = response.status === 200 ? 'ok' : (String(response.status) as Outcome);
  return { kind, retryAfter: response.headers.get('retry-after') };
}

async function sequence(sandbox: Sandbox, n: number): Promise<Outcome[]> {
  const kinds: Outcome[] = [];
  for (let i = 0; i < n; i++) {
    kinds.push((await outcome(`${sandbox.base_url}/api/public/list_surveys`, sandbox.api_key)).kind);
  }
  return kinds;
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('parseFaults', () => {
  it('reads probabilities, latency, retry_after and media faults', () => {
    const spec = parseFaults(
      '5xx=0.1,429=0.05,reset=0.02,truncate=0.02,latency=20ms,retry_after=3s,media_5xx=0.5,media_latency=1s',
    );
    expect(spec.api).toEqual({
      '5xx': 0.1,
      '429': 0.05,
      reset: 0.02,
      truncate: 0.02,
      latencyMs: 20,
      maxInFlight: 0,
    });
    expect(spec.media['5xx']).toBe(0.5);
    expect(spec.media.latencyMs).toBe(1000);
    expect(spec.retryAfterSeconds).toBe(3);
    expect(parseFaults('').api['5xx']).toBe(0);
  });

  it.each([
    ['5xx=2', '5xx=2'],
    ['oops=0.1', 'oops'],
    ['5xx', '5xx'],
    ['latency=fast', 'latency=fast'],
    ['5xx=0.6,429=0.6', 'more than 1'],
    ['reset=-0.1', 'reset=-0.1'],
  ])('rejects %s with a ConfigError naming the bad part', (spec, named) => {
    expect(() => parseFaults(spec)).toThrow(ConfigError);
    expect(() => parseFaults(spec)).toThrow(named);
  });

  it('refuses a bad spec at start', async () => {
    await expect(startSandbox({ faults: 'nope=1' })).rejects.toThrow(ConfigError);
  });
});

describe('faults', () => {
  it('produces 5xx, 429 with Retry-After, resets and truncated bodies', async () => {
    const sandbox = await startSandbox({
      seed: 11,
      faults: '5xx=0.2,429=0.2,reset=0.2,truncate=0.2,retry_after=2s',
    });
    try {
      const seen = new Map<Outcome, number>();
      for (let i = 0; i < 80; i++) {
        const got = await outcome(`${sandbox.base_url}/api/public/list_surveys`, sandbox.api_key);
        seen.set(got.kind, (seen.get(got.kind) ?? 0) + 1);
        if (got.kind === '429') expect(got.retryAfter).toBe('2');
      }
      for (const kind of ['ok', '429', 'reset', 'truncate'] as const)
        expect(seen.get(kind), kind).toBeGreaterThan(0);
      expect((seen.get('500') ?? 0) + (seen.get('503') ?? 0)).toBeGreaterThan(0);
      const statuses = sandbox.requests.map((r) => r.status);
      expect(statuses.filter((s) => s === 0)).toHaveLength(seen.get('reset') ?? 0);
      expect(statuses.filter((s) => s === 429)).toHaveLength(seen.get('429') ?? 0);
      // A truncated body is logged with the status its headers carried.
      expect(statuses.filter((s) => s === 200)).toHaveLength(
        (seen.get('ok') ?? 0) + (seen.get('truncate') ?? 0),
      );
    } finally {
      await sandbox.close();
    }
  });

  it('is deterministic under the seed', async () => {
    const spec = '5xx=0.15,429=0.15,reset=0.1,truncate=0.1';
    const a = await startSandbox({ seed: 5, faults: spec });
    const b = await startSandbox({ seed: 5, faults: spec });
    const c = await startSandbox({ seed: 6, faults: spec });
    try {
      const first = await sequence(a, 40);
      expect(await sequence(b, 40)).toEqual(first);
      expect(await sequence(c, 40)).not.toEqual(first);
      expect(new Set(first).size).toBeGreaterThan(2);
    } finally {
      await Promise.all([a.close(), b.close(), c.close()]);
    }
  });

  it('can be changed and switched off at runtime', async () => {
    const sandbox = await startSandbox({ seed: 5 });
    try {
      expect(new Set(await sequence(sandbox, 10))).toEqual(new Set(['ok']));
      sandbox.setFaults('5xx=1');
      expect((await sequence(sandbox, 5)).every((k) => k === '500' || k === '503')).toBe(true);
      sandbox.setFaults(null);
      expect(new Set(await sequence(sandbox, 5))).toEqual(new Set(['ok']));
      expect(() => sandbox.setFaults('5xx=x')).toThrow(ConfigError);
    } finally {
      await sandbox.close();
    }
  });

  it('applies media_ faults to the storage and stream listeners only', async () => {
    const sandbox = await startSandbox({ seed: 5, faults: 'media_5xx=1' });
    try {
      const linkId = studyOf(sandbox, 'audio');
      const id = sandbox.responses(linkId)[0]!.id;
      const detail = await api<Detail>(sandbox, `responses/${linkId}/${id}`);
      expect(detail.status).toBe(200);
      const url = detail.body.transcript.find((row) => row.audio)!.audio!;
      expect(['500', '503']).toContain((await outcome(url)).kind);
    } finally {
      await sandbox.close();
    }
  });
});

describe('request log', () => {
  it('writes one JSON line per request on every listener, exactly as JSON.stringify does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandbox-log-'));
    dirs.push(dir);
    const file = join(dir, 'requests.jsonl');
    const sandbox = await startSandbox({ seed: 7, requestLog: file });
    const linkId = studyOf(sandbox, 'video');
    const id = sandbox.responses(linkId)[0]!.id;
    await fetch(`${sandbox.base_url}/api/public/list_surveys`);
    await api(sandbox, 'list_surveys');
    await api(sandbox, `responses/${linkId}?page=0&per_page=2`);
    const detail = await api<Detail>(sandbox, `responses/${linkId}/${id}`);
    const video = detail.body.transcript.find((row) => row.video)!.video!;
    await (await fetch(video.mp4_url)).arrayBuffer();
    await (await fetch(video.stream_url, { headers: { 'x-api-key': 'sent anyway' } })).arrayBuffer();
    const audioSandboxLink = studyOf(sandbox, 'audio');
    const audioDetail = await api<Detail>(
      sandbox,
      `responses/${audioSandboxLink}/${sandbox.responses(audioSandboxLink)[0]!.id}`,
    );
    await (await fetch(audioDetail.body.transcript.find((row) => row.audio)!.audio!)).arrayBuffer();
    await sandbox.close();

    const lines = readFileSync(file, 'utf8').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(sandbox.requests.length);
    expect(lines).toEqual(sandbox.requests.map((entry) => JSON.stringify(entry)));
    const entries = lines.map((line) => JSON.parse(line));
    for (const entry of entries)
      expect(Object.keys(entry)).toEqual(['listener', 'method', 'path', 'status', 'x_api_key']);
    expect(entries[0]).toEqual({
      listener: 'api',
      method: 'GET',
      path: '/api/public/list_surveys',
      status: 401,
      x_api_key: false,
    });
    expect(entries[1]).toEqual({
      listener: 'api',
      method: 'GET',
      path: '/api/public/list_surveys',
      status: 200,
      x_api_key: true,
    });
    expect(entries[2].path).toBe(`/api/public/responses/${linkId}?page=0&per_page=2`);
    expect(new Set(entries.map((e) => e.listener))).toEqual(new Set(['api', 'storage', 'stream']));
    const stream = entries.filter((e) => e.listener === 'stream');
    expect(stream.map((e) => e.x_api_key)).toEqual([false, true]);
    expect(stream[0].path).toBe(new URL(video.mp4_url).pathname + new URL(video.mp4_url).search);
    // The key itself is never logged.
    expect(readFileSync(file, 'utf8')).not.toContain(sandbox.api_key);
  });
});

describe('max_in_flight', () => {
  it('answers 429 with Retry-After to requests beyond the limit in flight, and serves the rest', async () => {
    const sandbox = await startSandbox({
      seed: 1,
      studies: 1,
      responses: 2,
      faults: 'max_in_flight=2,latency=50ms',
    });
    try {
      const url = `${sandbox.base_url}/api/public/list_surveys`;
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => fetch(url, { headers: { 'x-api-key': sandbox.api_key } })),
      );
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).toEqual([200, 200, 429, 429, 429, 429]);
      expect(answers.find((a) => a.status === 429)?.headers.get('retry-after')).toBe('1');
      // Once the first two are done, there is room again.
      const after = await fetch(url, { headers: { 'x-api-key': sandbox.api_key } });
      expect(after.status).toBe(200);
    } finally {
      await sandbox.close();
    }
  });

  it('rejects a limit that is not a whole number', () => {
    expect(() => parseFaults('max_in_flight=0')).toThrow(/max_in_flight=0/);
    expect(() => parseFaults('max_in_flight=1.5')).toThrow(/whole number/);
  });
});
