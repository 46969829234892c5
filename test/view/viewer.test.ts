/**
 * `study-export view` and report.html in a real browser (headless Chromium through
 * playwright-core) against a run of the sandbox with audio and video studies: every study
 * and response appears, the filter finds a known answer, a conversation shows its turns in
 * order, audio and video play with the duration ffprobe reads from the same zip entry,
 * seeking asks for a byte range, a hostile answer is only text, and no URL reaches outside
 * the run. A screenshot of each page is kept under test-output/view/.
 */
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import type { ViewRequest, ViewServer } from '../../src/view/server.ts';
import {
  type Browser,
  extractEntry,
  ffprobeDuration,
  ffprobeHlsDuration,
  screenshotPath,
} from '../helpers/browser.ts';
import { startViewedRun, type ViewedRun } from '../helpers/browser-run.ts';

/** What the page's elements offer here (the project's types have no DOM). */
interface Anchor {
  pathname: string;
}
interface MediaElement {
  readyState: number;
  duration: number;
  currentTime: number;
  load(): void;
  addEventListener(type: string, listener: () => void, options: { once: boolean }): void;
}
/** The response ids the listed links point at. */
const linkedIds = (as: unknown[]) =>
  (as as Anchor[]).map((a) => decodeURIComponent(a.pathname.split('/').at(-1) ?? ''));
/** Resolves once the element has its metadata (readyState 1 or more). */
const metadataLoaded = (element: unknown) =>
  new Promise<void>((resolve) => {
    const media = element as MediaElement;
    if (media.readyState >= 1) resolve();
    else media.addEventListener('loadedmetadata', () => resolve(), { once: true });
  });

const HOSTILE = '<img src=x onerror="window.__pwned=1"> javascript:window.__pwned=2';

let sandbox: Sandbox;
let browser: Browser;
let viewed: ViewedRun;
let runDir: string;
let server: ViewServer;
const requests: ViewRequest[] = [];
let hostileResponse = '';
let tables: {
  attributes: Record<string, unknown>[];
  responses: Record<string, unknown>[];
  answers: Record<string, unknown>[];
  transcript: Record<string, unknown>[];
  media: Record<string, unknown>[];
};

/** An answer and a turn of the first study's first response say HOSTILE. */
function plantHostile(sandbox: Sandbox): void {
  const study = sandbox.studies()[0]!;
  const listed = sandbox.responses(study.link_id)[0]!;
  hostileResponse = listed.id;
  sandbox.mutateListItem(study.link_id, listed.id, (item) => {
    const answers = item.answers_array as Record<string, unknown>[];
    answers[0] = { ...answers[0], answer: HOSTILE };
    return item;
  });
  sandbox.mutateDetail(study.link_id, listed.id, (detail) => {
    const transcript = detail.transcript as Record<string, unknown>[];
    const turn = transcript.findIndex((row) => row.answer_id !== null);
    transcript[turn] = { ...transcript[turn], user: HOSTILE };
    return detail;
  });
}

beforeAll(async () => {
  viewed = await startViewedRun({
    // Recordings a few hundred kB long, so that a browser reads them in parts.
    sandbox: { seed: 32, studies: 6, responses: 1, mediaScale: 300 },
    prepare: plantHostile,
    pipeline: { media: { enabled: true, video: 'both' } },
    onRequest: (r) => requests.push(r),
  });
  ({ sandbox, browser, runDir, server } = viewed);
  tables = {
    attributes: await viewed.table('attributes'),
    responses: await viewed.table('responses'),
    answers: await viewed.table('answers'),
    transcript: await viewed.table('transcript'),
    media: await viewed.table('media'),
  };
}, 120_000);

afterAll(() => viewed?.stop());

function open(path: string): Promise<Page> {
  return viewed.open(path);
}

describe('report.html opened from disk', () => {
  it('shows every study with its charts, each with a title', async () => {
    const page = await browser.context.newPage();
    const external: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith('file:')) external.push(request.url());
    });
    await page.goto(`file://${join(runDir, 'report.html')}`);
    const headings = await page.locator('section > h2').allTextContents();
    for (const study of sandbox.studies())
      expect(headings.some((h) => h.startsWith(study.link_id))).toBe(true);
    const charts = page.locator('svg[role=img]');
    expect(await charts.count()).toBeGreaterThanOrEqual(sandbox.studies().length * 4);
    for (const title of await page.locator('svg[role=img] > title').allTextContents())
      expect(title).not.toBe('');
    expect(await page.locator('img').count()).toBe(0);
    expect(external).toEqual([]);
    await page.screenshot({ path: await screenshotPath('report'), fullPage: true });
    // Printed: the same page, every chart kept (print CSS hides nothing of the figures).
    await page.emulateMedia({ media: 'print' });
    expect(await page.locator('svg[role=img]').count()).toBe(await charts.count());
    await page.screenshot({ path: await screenshotPath('report-print'), fullPage: true });
    await page.close();
  });
});

describe('study-export view', () => {
  it('lists every study, and every response under its study', async () => {
    const page = await open('/');
    const names = await page.locator('table.list tbody th a').allTextContents();
    expect(names.sort()).toEqual(
      sandbox
        .studies()
        .map((s) => s.link_id)
        .sort(),
    );
    await page.screenshot({ path: await screenshotPath('studies'), fullPage: true });
    let seen = 0;
    for (const study of sandbox.studies()) {
      await page.getByRole('link', { name: study.link_id, exact: true }).click();
      const links = await page.locator('table.list tbody th a').evaluateAll(linkedIds);
      const expected = tables.responses.filter((r) => r.study_id === study.id).map((r) => r.response_id);
      expect(links.sort()).toEqual([...expected].sort());
      seen += links.length;
      await page.goBack();
    }
    expect(seen).toBe(tables.responses.length);
    // Keyboard: j focuses the first study, Enter opens it.
    await page.goto(server.url);
    await page.keyboard.press('j');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/study\//);
    expect(await page.locator('h1').textContent()).not.toBe('Studies');
    await page.close();
  });

  it('finds a known answer with the text filter', async () => {
    const known = tables.answers.find(
      (a) => typeof a.answer === 'string' && /[A-Za-z]{5,}/.test(a.answer) && a.answer !== HOSTILE,
    )!;
    const needle = /[A-Za-z]{5,}/.exec(known.answer as string)![0];
    const page = await open(`/study/${encodeURIComponent(known.study_id as string)}`);
    const before = await page.locator('table.list tbody tr').count();
    await page.keyboard.press('/');
    await page.keyboard.type(needle);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\?q=/);
    const rows = await page.locator('table.list tbody th a').evaluateAll(linkedIds);
    expect(rows).toContain(known.response_id);
    const matching = new Set(
      tables.answers
        .filter(
          (a) =>
            a.study_id === known.study_id && String(a.answer).toLowerCase().includes(needle.toLowerCase()),
        )
        .map((a) => a.response_id),
    );
    for (const id of matching) expect(rows).toContain(id);
    expect(rows.length).toBeLessThanOrEqual(before);
    // The word is marked, not the whole snippet.
    for (const mark of await page.locator('mark').allTextContents())
      expect(mark.toLowerCase()).toBe(needle.toLowerCase());
    await page.screenshot({ path: await screenshotPath('responses-filtered'), fullPage: true });
    // Text no answer holds leaves no response.
    await page.getByLabel('Words in answers').fill('zq-no-answer-says-this-qz');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/zq-no-answer/);
    expect(await page.locator('table.list tbody tr').count()).toBe(0);
    expect(await page.locator('table.list caption').textContent()).toBe(`0 of ${before} responses`);
    await page.close();
  });

  it('filters by attribute and by recording', async () => {
    const attribute = tables.attributes.find((a) => a.value !== '')!;
    const study = attribute.study_id as string;
    const page = await open(`/study/${encodeURIComponent(study)}`);
    await page.getByLabel('Attribute').fill(`${attribute.key}=${attribute.value}`);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/attr=/);
    const withAttribute = tables.attributes
      .filter((a) => a.study_id === study && a.key === attribute.key && a.value === attribute.value)
      .map((a) => a.response_id);
    expect((await page.locator('table.list tbody th a').evaluateAll(linkedIds)).sort()).toEqual(
      [...new Set(withAttribute)].sort(),
    );
    // Recording: the responses of a video study with a video turn, then those with none.
    const videoStudy = tables.transcript.find((t) => t.has_video === true)!.study_id as string;
    const withVideo = new Set(
      tables.transcript
        .filter((t) => t.study_id === videoStudy && t.has_video === true)
        .map((t) => t.response_id),
    );
    await page.goto(new URL(`/study/${encodeURIComponent(videoStudy)}`, server.url).href);
    await page.getByLabel('Recording').selectOption('video');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/rec=video/);
    expect((await page.locator('table.list tbody th a').evaluateAll(linkedIds)).sort()).toEqual(
      [...withVideo].sort(),
    );
    await page.getByLabel('Recording').selectOption('none');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/rec=none/);
    const all = tables.responses.filter((r) => r.study_id === videoStudy).map((r) => r.response_id);
    expect((await page.locator('table.list tbody th a').evaluateAll(linkedIds)).sort()).toEqual(
      all
        .filter(
          (id) => !withVideo.has(id) && !tables.transcript.some((t) => t.response_id === id && t.has_audio),
        )
        .sort(),
    );
    await page.close();
  });

  it('shows a conversation turn by turn, in order, with moderator and respondent', async () => {
    const response = tables.responses.find((r) => r.response_id !== hostileResponse)!;
    const id = response.response_id as string;
    const turns = tables.transcript
      .filter((t) => t.response_id === id)
      .sort((a, b) => Number(a.turn) - Number(b.turn));
    const page = await open(`/response/${encodeURIComponent(id)}`);
    const ids = await page.locator('ol.dialogue > li').evaluateAll((lis) => lis.map((li) => li.id));
    expect(ids).toEqual(turns.map((t) => `turn-${t.turn}`));
    const moderator = await page.locator('ol.dialogue > li .moderator .said').allTextContents();
    expect(moderator).toEqual(turns.map((t) => t.moderator));
    // j moves the focus from turn to turn.
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    expect(await page.evaluate('document.activeElement && document.activeElement.id')).toBe(
      `turn-${turns[1]!.turn}`,
    );
    await page.close();
  });

  for (const kind of ['audio', 'video'] as const) {
    it(`plays ${kind} out of media.zip with the duration ffprobe reads, and seeks by range`, async () => {
      const row = tables.media.find((m) => m.kind === kind && m.status === 'archived')!;
      expect(row).toBeDefined();
      const expected = await ffprobeDuration(join(runDir, 'media.zip'), row.file as string);
      expect(expected).toBeGreaterThan(0);
      const page = await open(`/response/${encodeURIComponent(row.response_id as string)}`);
      const src = `/media/${encodeURIComponent(row.response_id as string)}/${row.turn}/${kind}`;
      // Requests whose whole body the browser received: the first one whole (on a loaded machine
      // it can be, before the seek; else the browser leaves it paused) leaves a seek nothing to
      // ask for.
      const received: string[] = [];
      page.on('requestfinished', (request) => {
        if (new URL(request.url()).pathname === src) received.push(request.headers().range ?? '');
      });
      const element = page.locator(`${kind}[src="${src}"]`);
      await element.scrollIntoViewIfNeeded();
      await element.evaluate(metadataLoaded);
      const duration = await element.evaluate((media) => (media as unknown as MediaElement).duration);
      expect(Math.abs(duration - expected)).toBeLessThan(0.06);
      const from = requests.length;
      await element.evaluate(
        (element) =>
          new Promise<void>((resolve) => {
            const media = element as unknown as MediaElement;
            media.addEventListener('seeked', () => resolve(), { once: true });
            media.currentTime = media.duration * 0.8;
          }),
      );
      const media = requests.filter((r) => r.path === src);
      expect(media.length).toBeGreaterThan(0);
      for (const r of media)
        expect(r.range, 'every media request asks for a range').toMatch(/^bytes=\d+-\d*$/);
      expect(media.every((r) => r.status === 206)).toBe(true);
      if (kind === 'audio' && !received.includes('bytes=0-')) {
        // The MP3's frames run to its end: a seek to 80% asks for bytes from there.
        const afterSeek = requests.slice(from).filter((r) => r.path === src);
        const seekRange = afterSeek.find((r) => r.range && !r.range.startsWith('bytes=0-'));
        expect(
          seekRange,
          `a ranged request after seeking (requests: ${JSON.stringify(media)})`,
        ).toBeDefined();
      }
      // (The sandbox's MP4 has every frame in its first 2 kB and padding after: the browser has
      // what a seek needs from its first request.) Any range is the entry's bytes at that place.
      const bytes = await extractEntry(join(runDir, 'media.zip'), row.file as string);
      const start = Math.floor(bytes.length / 2);
      const ranged = await page.request.get(new URL(src, server.url).href, {
        headers: { range: `bytes=${start}-${start + 999}` },
      });
      expect(ranged.status()).toBe(206);
      expect(ranged.headers()['content-range']).toBe(`bytes ${start}-${start + 999}/${bytes.length}`);
      expect(Buffer.compare(await ranged.body(), bytes.subarray(start, start + 1000))).toBe(0);
      await page.screenshot({ path: await screenshotPath(`conversation-${kind}`), fullPage: true });
      await page.close();
    });
  }

  it('serves HLS through its archived playlist, only the segments it lists, and it plays', async () => {
    const row = tables.media.find((m) => m.kind === 'hls' && m.status === 'archived')!;
    expect(row).toBeDefined();
    const base = new URL(
      `/media/${encodeURIComponent(row.response_id as string)}/${row.turn}/hls/`,
      server.url,
    );
    const playlist = await (await fetch(new URL('index.m3u8', base))).text();
    expect(playlist).toMatch(/^#EXTM3U/);
    const segments = playlist.split('\n').filter((line) => line.trim() && !line.startsWith('#'));
    expect(segments.length).toBeGreaterThan(0);
    const segment = await fetch(new URL(segments[0]!.trim(), base));
    expect(segment.status).toBe(200);
    expect(segment.headers.get('content-type')).toBe('video/mp2t');
    expect((await fetch(new URL('00099.ts', base))).status).toBe(404);
    // Chromium plays HLS itself: the playlist and its segments come out of the zip.
    const expected = await ffprobeHlsDuration(join(runDir, 'media.zip'), row.file as string);
    const from = requests.length;
    const page = await open(`/response/${encodeURIComponent(row.response_id as string)}`);
    const src = `/media/${encodeURIComponent(row.response_id as string)}/${row.turn}/hls/index.m3u8`;
    const element = page.locator(`video[src="${src}"]`);
    await element.scrollIntoViewIfNeeded();
    await element.evaluate(metadataLoaded);
    const duration = await element.evaluate((media) => (media as unknown as MediaElement).duration);
    expect(Math.abs(duration - expected)).toBeLessThan(0.06);
    const listed = new Set(segments.map((name) => `${src.replace('index.m3u8', '')}${name.trim()}`));
    const segmentRequests = requests.slice(from).filter((r) => listed.has(r.path));
    expect(segmentRequests.length).toBeGreaterThan(0);
    expect(segmentRequests.every((r) => r.status === 200 || r.status === 206)).toBe(true);
    await page.close();
  });

  it('shows a hostile answer as text and runs none of it', async () => {
    const page = await open(`/response/${encodeURIComponent(hostileResponse)}`);
    const csp = (await page.request.get(page.url())).headers()['content-security-policy'];
    expect(csp).toContain("script-src 'self'");
    const said = await page.locator('.user .said').allTextContents();
    expect(said).toContain(HOSTILE);
    expect(await page.locator('main img').count()).toBe(0);
    expect(await page.locator('main a[href^="javascript:"]').count()).toBe(0);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    await page.screenshot({ path: await screenshotPath('conversation-hostile'), fullPage: true });
    // And in the filtered list, where the answer shows as the matching text.
    const study = tables.responses.find((r) => r.response_id === hostileResponse)!.study_id as string;
    const list = await open(`/study/${encodeURIComponent(study)}?q=${encodeURIComponent('onerror')}`);
    expect(await list.locator('.snippet').allTextContents()).toContainEqual(
      expect.stringContaining('<img src=x'),
    );
    expect(await list.locator('mark').allTextContents()).toContain('onerror');
    expect(await list.locator('main img').count()).toBe(0);
    expect(await list.evaluate('window.__pwned')).toBeUndefined();
    await list.close();
    await page.close();
  });

  it('refuses every path that would reach outside the run', async () => {
    const rid = encodeURIComponent(tables.media.find((m) => m.kind === 'hls')!.response_id as string);
    const turn = tables.media.find((m) => m.kind === 'hls')!.turn;
    const attempts = [
      '/../manifest.json',
      '/%2e%2e/manifest.json',
      '/assets/..%2F..%2Fmanifest.json',
      '/media/..%2F..%2Fmanifest.json/1/audio',
      `/media/${rid}/${turn}/hls/..%2F..%2F..%2F..%2Fmanifest.json`,
      `/media/${rid}/${turn}/hls/%2e%2e%2fmanifest.json`,
      '/study/..%2F..%2F..%2Fetc%2Fpasswd',
      '/response/%2e%2e',
      '/media/%ZZ/1/audio',
      '/manifest.json',
      '/media.zip',
    ];
    for (const path of attempts) {
      const status = await rawGet(server.url, path);
      expect([400, 404], path).toContain(status);
    }
    // Another site's page cannot use it through DNS rebinding.
    expect(await rawGet(server.url, '/', 'attacker.example:80')).toBe(400);
  });
});

/** A GET with the path exactly as given (fetch would normalise the dots away). */
function rawGet(base: string, path: string, host?: string): Promise<number> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      { host: url.hostname, port: url.port, path, headers: host ? { host } : {} },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    request.on('error', reject);
    request.end();
  });
}
