import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { allPages, api, type Detail, type Item, studyOf } from '../helpers/sandbox.ts';

let sandbox: Sandbox;

beforeEach(async () => {
  sandbox = await startSandbox({ seed: 7, responses: 10, startTime: Date.parse('2030-05-01T12:00:00Z') });
});
afterEach(async () => {
  await sandbox.close();
});

describe('controls', () => {
  it('renames a study: the new link_id routes, the old one is 404, the id stays', async () => {
    const before = sandbox.studies()[0]!;
    sandbox.renameStudy(before.link_id, 'renamed-study');
    const after = (await api<Array<{ id: string; link_id: string }>>(sandbox, 'list_surveys')).body[0]!;
    expect(after).toMatchObject({ id: before.id, link_id: 'renamed-study' });
    expect((await api(sandbox, `responses/${before.link_id}`)).status).toBe(404);
    const items = (await api<Item[]>(sandbox, 'responses/renamed-study')).body;
    expect(items).toHaveLength(10);
    const detail = await api<Detail>(sandbox, `responses/renamed-study/${items[0]!.id}`);
    expect(detail.body.survey).toBe('renamed-study');
    sandbox.renameStudy(before.id, 'by-permanent-id');
    expect((await api(sandbox, 'responses/by-permanent-id')).status).toBe(200);
  });

  it('touches a response: updated_at moves and updated_since finds it', async () => {
    const linkId = studyOf(sandbox, 'text');
    const target = sandbox.responses(linkId)[0]!;
    const since = new Date(sandbox.clock.now()).toISOString();
    expect(await allPages(sandbox, linkId, `&updated_since=${since}`)).toEqual([]);
    sandbox.clock.advance(1000);
    // The clock follows real time from where it was set, so "now" is a window here.
    const touchedFrom = sandbox.clock.now();
    sandbox.touchResponse(linkId, target.id);
    const touchedTo = sandbox.clock.now();
    const changed = await allPages(sandbox, linkId, `&updated_since=${since}`);
    expect(changed.map((r) => r.id)).toEqual([target.id]);
    const updatedAt = Date.parse(changed[0]!['updated_at'] as string);
    expect(updatedAt).toBeGreaterThanOrEqual(touchedFrom);
    expect(updatedAt).toBeLessThanOrEqual(touchedTo);
    sandbox.touchResponse(linkId, target.id, new Date('2031-01-01T00:00:00Z'));
    expect(sandbox.responses(linkId)[0]!.updated_at).toBe('2031-01-01T00:00:00.000Z');
  });

  it('adds a response at the end of the order and counts it in desc', async () => {
    const linkId = studyOf(sandbox, 'audio');
    const id = sandbox.addResponse(linkId);
    const items = await allPages(sandbox, linkId, '', 4);
    expect(items).toHaveLength(11);
    expect(items.at(-1)!.id).toBe(id);
    expect(Date.parse(items.at(-1)!['created_at'] as string)).toBeGreaterThan(
      Date.parse('2030-05-01T12:00:00Z') - 1,
    );
    const study = (
      await api<Array<{ link_id: string; desc: string; title: string }>>(sandbox, 'list_surveys')
    ).body.find((s) => s.link_id === linkId)!;
    expect(study.desc).toBe(`${study.title} (11 Responses)`);
    const detail = await api<Detail>(sandbox, `responses/${linkId}/${id}`);
    expect(detail.status).toBe(200);
    expect(detail.body.transcript.some((row) => row.audio !== null)).toBe(true);
  });

  it('sorted by updated_at when asked: a touched response moves to the end, the rest back one place', async () => {
    const sorted = await startSandbox({
      seed: 7,
      responses: 10,
      responseOrder: 'updated_at',
      startTime: Date.parse('2030-05-01T12:00:00Z'),
    });
    try {
      const linkId = studyOf(sorted, 'text');
      const items = await allPages(sorted, linkId, '', 4);
      const shown = items.flatMap((r) => (typeof r['updated_at'] === 'string' ? [r['updated_at']] : []));
      expect(shown.length).toBeGreaterThan(5);
      expect(shown).toEqual([...shown].sort());
      const before = items.map((r) => r.id);
      expect(new Set(before)).toEqual(new Set(sorted.responses(linkId).map((r) => r.id)));
      const [first, second, ...rest] = before;
      sorted.touchResponse(linkId, first!);
      const after = (await allPages(sorted, linkId, '', 4)).map((r) => r.id);
      expect(after).toEqual([second, ...rest, first]);
      // The default keeps created_at order, whatever is touched.
      const created = sandbox.responses(studyOf(sandbox, 'text')).map((r) => r.id);
      sandbox.touchResponse(studyOf(sandbox, 'text'), created[0]!);
      expect((await allPages(sandbox, studyOf(sandbox, 'text'), '', 4)).map((r) => r.id)).toEqual(created);
    } finally {
      await sorted.close();
    }
  });

  it('deletes a response: gone from the list and desc, its detail is a 404', async () => {
    const linkId = studyOf(sandbox, 'text');
    const [first, second] = sandbox.responses(linkId);
    sandbox.deleteResponse(linkId, second!.id);
    const items = await allPages(sandbox, linkId, '', 3);
    expect(items).toHaveLength(9);
    expect(items.map((r) => r.id)).not.toContain(second!.id);
    expect(items[0]!.id).toBe(first!.id);
    expect((await api(sandbox, `responses/${linkId}/${second!.id}`)).status).toBe(404);
    const study = (
      await api<Array<{ link_id: string; desc: string; title: string }>>(sandbox, 'list_surveys')
    ).body.find((s) => s.link_id === linkId)!;
    expect(study.desc).toBe(`${study.title} (9 Responses)`);
    expect(() => sandbox.deleteResponse(linkId, second!.id)).toThrow(/no response/);
  });

  it("deletes a study: gone from every key's study list, its responses a 404", async () => {
    const own = await startSandbox({ seed: 3, studies: 3, responses: 2 });
    try {
      const [first, second] = own.studies(own.keys.all);
      own.deleteStudy(second!.link_id);
      for (const key of Object.values(own.keys)) {
        const listed = (await api<Array<{ id: string }>>(own, 'list_surveys', key)).body.map((s) => s.id);
        expect(listed).not.toContain(second!.id);
      }
      expect((await api(own, `responses/${second!.link_id}`, own.keys.all)).status).toBe(404);
      expect((await api<unknown[]>(own, `responses/${first!.link_id}`, own.keys.all)).body).toHaveLength(2);
      expect(() => own.deleteStudy(second!.id)).toThrow(/no study/);
    } finally {
      await own.close();
    }
  });

  it('adds studies with hostile link_ids and response ids, reachable through encoded paths', async () => {
    const hostile = [
      'a/b/../c',
      '研究-スタディ?x=1&y=#frag',
      'x'.repeat(300),
      '%2F already encoded %',
      ' spaced out ',
    ];
    for (const [n, linkId] of hostile.entries()) {
      const responseIds = [`r/${n}/../etc`, `ответ ${n} 🎤`, `${'y'.repeat(300)}${n}`];
      const study = sandbox.addStudy({
        link_id: linkId,
        title: `Hostile ${n}`,
        modality: 'video',
        responseIds,
      });
      expect(study.link_id).toBe(linkId);
      expect(study.desc).toBe(`Hostile ${n} (3 Responses)`);
      const listed = await api<Array<{ link_id: string }>>(sandbox, 'list_surveys', sandbox.keys.secondary);
      expect(listed.body.map((s) => s.link_id)).toContain(linkId);
      const items = await api<Item[]>(sandbox, `responses/${encodeURIComponent(linkId)}`);
      expect(items.status).toBe(200);
      expect(items.body.map((r) => r.id)).toEqual(responseIds);
      for (const id of responseIds) {
        const detail = await api<Detail>(
          sandbox,
          `responses/${encodeURIComponent(linkId)}/${encodeURIComponent(id)}`,
        );
        expect(detail.status).toBe(200);
        expect(detail.body).toMatchObject({ id, survey: linkId });
        const video = detail.body.transcript.find((row) => row.video)!.video!;
        expect((await fetch(video.mp4_url)).status).toBe(200);
      }
    }
    // Unencoded, a "/" in the id is another path segment and does not route.
    expect((await api(sandbox, 'responses/a/b/../c')).status).toBe(404);
    // Malformed percent-encoding is a 404, not a crash.
    expect((await api(sandbox, 'responses/%E0%A4%A')).status).toBe(404);
  });

  it('refuses a rename or an added study onto a link_id already taken', () => {
    const [a, b] = sandbox.studies();
    expect(() => sandbox.renameStudy(a!.link_id, b!.link_id)).toThrow(/taken/);
    expect(() => sandbox.addStudy({ link_id: a!.link_id })).toThrow(/taken/);
    expect(() => sandbox.renameStudy('nope', 'x')).toThrow(/no study/);
  });

  it('serves mutated list items and details', async () => {
    const linkId = studyOf(sandbox, 'text');
    const [first, second] = sandbox.responses(linkId);
    sandbox.mutateListItem(linkId, first!.id, (item) => ({
      ...item,
      answers: 'not an object',
      extra_field: 42,
    }));
    sandbox.mutateListItem(linkId, second!.id, () => null);
    sandbox.mutateDetail(linkId, first!.id, (detail) => ({ ...detail, transcript: [{ moderator: 1 }] }));
    const items = (await api<Array<Record<string, unknown> | null>>(sandbox, `responses/${linkId}`)).body;
    expect(items[0]).toMatchObject({ id: first!.id, answers: 'not an object', extra_field: 42 });
    expect(items[1]).toBeNull();
    expect(sandbox.responses(linkId)[1]).toBeNull();
    const detail = await api<Detail>(sandbox, `responses/${linkId}/${first!.id}`);
    expect(detail.body.transcript).toEqual([{ moderator: 1 }]);
  });

  it('overrides the next matching requests, then answers normally again', async () => {
    const linkId = studyOf(sandbox, 'text');
    sandbox.overrideNext(
      { listener: 'api', pathIncludes: `/responses/${linkId}` },
      { status: 200, body: '[{"id": "x", trunc' },
      2,
    );
    sandbox.overrideNext(
      { listener: 'api', pathIncludes: 'list_surveys' },
      {
        status: 502,
        contentType: 'text/html',
        body: '<html>Bad gateway</html>',
        headers: { 'x-proxy': 'edge' },
      },
    );
    for (let i = 0; i < 2; i++) {
      const response = await fetch(`${sandbox.base_url}/api/public/responses/${linkId}`, {
        headers: { 'x-api-key': sandbox.api_key },
      });
      expect(await response.text()).toBe('[{"id": "x", trunc');
    }
    expect((await api<Item[]>(sandbox, `responses/${linkId}`)).body).toHaveLength(10);
    const gateway = await fetch(`${sandbox.base_url}/api/public/list_surveys`, {
      headers: { 'x-api-key': sandbox.api_key },
    });
    expect(gateway.status).toBe(502);
    expect(gateway.headers.get('content-type')).toBe('text/html');
    expect(gateway.headers.get('x-proxy')).toBe('edge');
    expect((await api(sandbox, 'list_surveys')).status).toBe(200);
    expect(sandbox.requests.map((r) => r.status)).toEqual([200, 200, 200, 502, 200]);

    // Media listeners too.
    const audioLink = studyOf(sandbox, 'audio');
    const detail = await api<Detail>(
      sandbox,
      `responses/${audioLink}/${sandbox.responses(audioLink)[0]!.id}`,
    );
    const url = detail.body.transcript.find((row) => row.audio)!.audio!;
    sandbox.overrideNext(
      { listener: 'storage' },
      { status: 404, contentType: 'application/xml', body: '<Error/>' },
    );
    expect((await fetch(url)).status).toBe(404);
    expect((await fetch(url)).status).toBe(200);
  });
});
