import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { allPages, api, getJson, type Item, studyOf } from '../helpers/sandbox.ts';

let sandbox: Sandbox;
let capped: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 7 });
  capped = await startSandbox({ seed: 7, maxPerPage: 7 });
});
afterAll(async () => {
  await sandbox.close();
  await capped.close();
});

describe('authentication', () => {
  const paths = () => {
    const linkId = studyOf(sandbox, 'text');
    const responseId = sandbox.responses(linkId)[0]!.id;
    return ['list_surveys', `responses/${linkId}`, `responses/${linkId}/${responseId}`];
  };

  it('answers 401 with a JSON error when the key is missing, on all three operations', async () => {
    for (const path of paths()) {
      const reply = await getJson<{ error: string }>(`${sandbox.base_url}/api/public/${path}`);
      expect(reply.status, path).toBe(401);
      expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
      expect(reply.body.error).toMatch(/x-api-key/);
    }
  });

  it('answers 401 with a JSON error when the key is wrong', async () => {
    for (const path of paths()) {
      const reply = await api<{ error: string }>(sandbox, path, 'not-the-key');
      expect(reply.status, path).toBe(401);
      expect(typeof reply.body.error).toBe('string');
      expect(JSON.stringify(reply.body)).not.toContain(sandbox.api_key);
    }
  });

  it('gives the two keys different, overlapping sets of studies', async () => {
    expect(sandbox.api_key).toBe(sandbox.keys.primary);
    const primary = (await api<Array<{ id: string }>>(sandbox, 'list_surveys')).body.map((s) => s.id);
    const secondary = (
      await api<Array<{ id: string }>>(sandbox, 'list_surveys', sandbox.keys.secondary)
    ).body.map((s) => s.id);
    expect(primary.length).toBeGreaterThan(0);
    expect(secondary.length).toBeGreaterThan(0);
    expect(secondary.some((id) => primary.includes(id))).toBe(true);
    expect(secondary.some((id) => !primary.includes(id))).toBe(true);
    expect(primary.some((id) => !secondary.includes(id))).toBe(true);
    expect(sandbox.studies(sandbox.keys.secondary).map((s) => s.id)).toEqual(secondary);
  });

  it('answers 404 for a study the key cannot see', async () => {
    const primaryIds = new Set(sandbox.studies().map((s) => s.id));
    const hidden = sandbox.studies(sandbox.keys.secondary).find((s) => !primaryIds.has(s.id))!;
    expect((await api(sandbox, `responses/${hidden.link_id}`)).status).toBe(404);
    expect((await api(sandbox, `responses/${hidden.link_id}`, sandbox.keys.secondary)).status).toBe(200);
  });
});

describe('list studies', () => {
  it('serves studies shaped as spec 2.1, with a true response count in desc', async () => {
    const studies = (await api<Array<Record<string, string>>>(sandbox, 'list_surveys')).body;
    expect(studies).toHaveLength(5);
    for (const study of studies) {
      expect(Object.keys(study).sort()).toEqual(['created_at', 'desc', 'id', 'link_id', 'title']);
      expect(study['created_at']).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?[+-]\d{2}:\d{2}$/);
      const items = await allPages(sandbox, study['link_id']!, '', 1000);
      expect(study['desc']).toBe(`${study['title']} (${items.length} Responses)`);
      expect(items.length).toBe(25);
    }
  });
});

describe('paging', () => {
  it('pages from 0 in a stable order without gaps or duplicates', async () => {
    const linkId = studyOf(sandbox, 'audio');
    const paged = await allPages(sandbox, linkId, '', 4);
    const whole = (await api<Item[]>(sandbox, `responses/${linkId}`)).body;
    expect(paged.map((r) => r.id)).toEqual(whole.map((r) => r.id));
    expect(new Set(paged.map((r) => r.id)).size).toBe(25);
    expect(whole.map((r) => r.id)).toEqual(sandbox.responses(linkId).map((r) => r.id));
    const createdAt = whole.map((r) => Date.parse(r['created_at'] as string));
    expect([...createdAt].sort((a, b) => a - b)).toEqual(createdAt);
    const page0 = (await api<Item[]>(sandbox, `responses/${linkId}?page=0&per_page=4`)).body;
    const page1 = (await api<Item[]>(sandbox, `responses/${linkId}?page=1&per_page=4`)).body;
    expect([...page0, ...page1].map((r) => r.id)).toEqual(whole.slice(0, 8).map((r) => r.id));
  });

  it('defaults per_page to 1000 and answers a page past the end with 200 []', async () => {
    const linkId = studyOf(sandbox, 'text');
    expect((await api<Item[]>(sandbox, `responses/${linkId}`)).body).toHaveLength(25);
    const past = await api<Item[]>(sandbox, `responses/${linkId}?page=3&per_page=10`);
    expect(past.status).toBe(200);
    expect(past.body).toEqual([]);
    const far = await api<Item[]>(sandbox, `responses/${linkId}?page=999999`);
    expect(far.status).toBe(200);
    expect(far.body).toEqual([]);
  });

  it('caps per_page silently at maxPerPage', async () => {
    const linkId = studyOf(capped, 'text');
    const all = capped.responses(linkId).map((r) => r.id);
    const big = await api<Item[]>(capped, `responses/${linkId}?per_page=100`);
    expect(big.status).toBe(200);
    expect(big.body.map((r) => r.id)).toEqual(all.slice(0, 7));
    const second = await api<Item[]>(capped, `responses/${linkId}?per_page=100&page=1`);
    expect(second.body.map((r) => r.id)).toEqual(all.slice(7, 14));
    const byDefault = await api<Item[]>(capped, `responses/${linkId}`);
    expect(byDefault.body).toHaveLength(7);
    const small = await api<Item[]>(capped, `responses/${linkId}?per_page=3&page=8`);
    expect(small.body.map((r) => r.id)).toEqual(all.slice(24, 25));
  });
});

describe('filters', () => {
  it('keeps responses updated strictly after updated_since (timestamp with Z)', async () => {
    const linkId = studyOf(sandbox, 'video');
    const items = sandbox.responses(linkId).filter((r) => r.updated_at !== undefined);
    const pivot = items[Math.floor(items.length / 2)]!;
    const since = pivot.updated_at!;
    expect(since).toMatch(/Z$/);
    const kept = await allPages(sandbox, linkId, `&updated_since=${encodeURIComponent(since)}`);
    expect(kept.map((r) => r.id)).not.toContain(pivot.id);
    const expected = items.filter((r) => Date.parse(r.updated_at!) > Date.parse(since)).map((r) => r.id);
    for (const id of expected) expect(kept.map((r) => r.id)).toContain(id);
    for (const item of kept) {
      if (typeof item['updated_at'] === 'string')
        expect(Date.parse(item['updated_at'])).toBeGreaterThan(Date.parse(since));
    }
  });

  it('accepts a date, a Z timestamp and an offset timestamp, all strictly after', async () => {
    const own = await startSandbox({ seed: 3, studies: 1, responses: 10 });
    try {
      const linkId = own.studies()[0]!.link_id;
      const base = Date.parse('2031-06-01T00:00:00.000Z');
      own.responses(linkId).forEach((r, i) => {
        own.touchResponse(linkId, r.id, new Date(base + i * 3_600_000));
      });
      const count = async (since: string) =>
        (await allPages(own, linkId, `&updated_since=${encodeURIComponent(since)}`)).length;
      expect(await count('2031-06-01')).toBe(9); // the one at exactly midnight is not after it
      expect(await count('2031-05-31')).toBe(10);
      expect(await count('2031-06-01T03:00:00Z')).toBe(6);
      expect(await count('2031-06-01T03:00:00.000Z')).toBe(6);
      expect(await count('2031-06-01T02:59:59.999Z')).toBe(7);
      expect(await count('2031-06-01T05:00:00+02:00')).toBe(6);
      expect(await count('2031-06-02T00:00:00Z')).toBe(0);
      // An unencoded "+" in the query decodes to a space; it still means the offset.
      expect((await allPages(own, linkId, '&updated_since=2031-06-01T05:00:00+02:00')).length).toBe(6);
    } finally {
      await own.close();
    }
  });

  it('includes in-progress responses by default and leaves them out with include_in_progress=false', async () => {
    const linkId = studyOf(sandbox, 'text');
    const all = await allPages(sandbox, linkId);
    const explicit = await allPages(sandbox, linkId, '&include_in_progress=true');
    const done = await allPages(sandbox, linkId, '&include_in_progress=false');
    expect(explicit.map((r) => r.id)).toEqual(all.map((r) => r.id));
    expect(done.length).toBeLessThan(all.length);
    const doneIds = new Set(done.map((r) => r.id));
    const left = all.filter((r) => !doneIds.has(r.id));
    // In-progress responses have no summary yet; finished ones do.
    for (const item of left) expect((item['answers'] as Record<string, string>)['Summary']).toBe('');
    for (const item of done) expect((item['answers'] as Record<string, string>)['Summary']).not.toBe('');
    expect(left.map((r) => r.id)).toContain(all[2]!.id);
  });
});

describe('errors', () => {
  const bad: Array<[string, string]> = [
    ['page', 'page=-1'],
    ['page', 'page=abc'],
    ['page', 'page=1.5'],
    ['page', 'page='],
    ['per_page', 'per_page=0'],
    ['per_page', 'per_page=ten'],
    ['per_page', 'per_page=-5'],
    ['updated_since', 'updated_since=yesterday'],
    ['updated_since', 'updated_since=2025-13-01'],
    ['updated_since', 'updated_since=2025-03-01T25:00:00Z'],
    ['updated_since', 'updated_since=1700000000'],
    ['include_in_progress', 'include_in_progress=maybe'],
    ['include_in_progress', 'include_in_progress='],
  ];
  it.each(bad)('answers 400 naming %s for %s', async (parameter, query) => {
    const reply = await api<{ error: string; parameter: string }>(
      sandbox,
      `responses/${studyOf(sandbox, 'text')}?${query}`,
    );
    expect(reply.status).toBe(400);
    expect(reply.body.parameter).toBe(parameter);
    expect(reply.body.error).toContain(parameter);
  });

  it('answers 404 with a JSON body for an unknown study, response or path', async () => {
    const linkId = studyOf(sandbox, 'text');
    for (const path of [
      'responses/no-such-study',
      'responses/no-such-study/x',
      `responses/${linkId}/no-such-response`,
      'nothing-here',
      'responses',
    ]) {
      const reply = await api<{ error: string }>(sandbox, path);
      expect(reply.status, path).toBe(404);
      expect(typeof reply.body.error).toBe('string');
    }
    const otherStudy = studyOf(sandbox, 'audio');
    const foreign = sandbox.responses(otherStudy)[0]!.id;
    expect((await api(sandbox, `responses/${linkId}/${foreign}`)).status).toBe(404);
  });

  it('answers 405 to methods other than GET and HEAD', async () => {
    const response = await fetch(`${sandbox.base_url}/api/public/list_surveys`, {
      method: 'POST',
      headers: { 'x-api-key': sandbox.api_key },
    });
    expect(response.status).toBe(405);
  });
});
