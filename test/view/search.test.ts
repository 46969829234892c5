/**
 * The viewer for reading, in a real browser (Debian's chromium through playwright-core)
 * against a sandbox run with text, audio and video studies: a search for several words across
 * every study finds exactly the responses holding them all, marks the words in snippets cut at
 * spaces that name their question (and concept); a hit opens with the words marked and goes
 * hit to hit keeping the query; a selection downloads as a CSV that papaparse reads back row
 * for row; and every page fits a 375px-wide phone, its video player included.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formulaPattern } from '../../src/output/formats/csv.ts';
import { screenshotPath } from '../helpers/browser.ts';
import { startViewedRun, type ViewedRun } from '../helpers/browser-run.ts';
import { readCsv } from '../helpers/readers.ts';

interface Anchor {
  pathname: string;
}
type Rows = Record<string, unknown>[];

let viewed: ViewedRun;
let tables: { responses: Rows; answers: Rows; transcript: Rows; attributes: Rows; studies: Rows };

const QUERY = 'PRICE  confused';
const TERMS = ['price', 'confused'];
const fold = (text: string) => text.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();

/** The texts of a response the search reads, by where they are. */
function textsOf(responseId: string): { where: string; text: string }[] {
  const response = tables.responses.find((r) => r.response_id === responseId)!;
  return [
    ...tables.answers
      .filter((a) => a.response_id === responseId)
      .map((a) => ({ where: `Question ${a.position}: ${a.question}`, text: String(a.answer) })),
    ...(response.summary ? [{ where: 'Summary', text: String(response.summary) }] : []),
    ...tables.transcript
      .filter((t) => t.response_id === responseId && !t.answer_id && t.user)
      .map((t) => ({ where: `Turn ${t.turn}`, text: String(t.user) })),
  ];
}

/** The responses holding every word somewhere, by study (link_id) then response_number. */
function expectedHits(): string[] {
  return tables.responses
    .filter((r) => {
      const all = fold(
        textsOf(r.response_id as string)
          .map((t) => t.text)
          .join('\n'),
      );
      return TERMS.every((term) => all.includes(term));
    })
    .map((r) => r.response_id as string);
}

const linkedIds = (as: unknown[]) =>
  (as as Anchor[]).map((a) => decodeURIComponent(a.pathname.split('/').at(-1) ?? ''));

beforeAll(async () => {
  viewed = await startViewedRun({
    sandbox: { seed: 7, studies: 6, responses: 8 },
    pipeline: { media: { enabled: true, video: 'mp4' } },
  });
  tables = {
    responses: await viewed.table('responses'),
    answers: await viewed.table('answers'),
    transcript: await viewed.table('transcript'),
    attributes: await viewed.table('attributes'),
    studies: await viewed.table('studies'),
  };
}, 120_000);

afterAll(() => viewed?.stop());

function open(path: string): Promise<Page> {
  return viewed.open(path);
}

async function search(page: Page): Promise<string[]> {
  await page.getByLabel('Words in answers').fill(QUERY);
  await page.getByRole('button', { name: 'Search' }).click();
  await page.waitForURL(/\/search\?q=/);
  return page.locator('table.list tbody th a').evaluateAll(linkedIds);
}

describe('the viewer for reading', () => {
  it('searches every study for several words, any order and case, and marks the words', async () => {
    const page = await open('/');
    const listed = await search(page);
    const expected = expectedHits();
    const studyOf = (id: string) => tables.responses.find((r) => r.response_id === id)!.study_id;
    expect(new Set(expected.map(studyOf)).size).toBeGreaterThanOrEqual(2);
    expect([...listed].sort()).toEqual([...expected].sort());
    // Every mark is one of the words, in the text as written.
    const marks = await page.locator('.snippet mark').allTextContents();
    expect(marks.length).toBeGreaterThan(0);
    for (const mark of marks) expect(TERMS).toContain(fold(mark));
    // Each snippet is one answer's text (or a piece of it cut at spaces), under its question.
    const items = await page.locator('tbody tr').evaluateAll((rows) =>
      rows.map((row) => ({
        id: decodeURIComponent(
          row.querySelector('th a')!.getAttribute('href')!.split('?')[0]!.split('/').at(-1)!,
        ),
        found: [...row.querySelectorAll('.found li:not(.note)')].map((li) => ({
          where: li.querySelector('.where')!.textContent!,
          snippet: li.querySelector('.snippet')!.textContent!,
        })),
      })),
    );
    let concepts = 0;
    for (const item of items) {
      expect(item.found.length).toBeGreaterThan(0);
      for (const { where, snippet } of item.found) {
        const piece = snippet.replace(/^… /, '').replace(/ …$/, '');
        const source = textsOf(item.id).find((t) => where.startsWith(t.where) && t.text.includes(piece));
        expect(source, `${where}: ${snippet}`).toBeDefined();
        const at = source!.text.indexOf(piece);
        // Cut at spaces: what comes before and after the piece is a space, or nothing.
        if (at > 0) expect(source!.text[at - 1]).toMatch(/\s/);
        if (at + piece.length < source!.text.length) expect(source!.text[at + piece.length]).toMatch(/\s/);
        if (where.includes('like or dislike about this concept')) {
          expect(where).toMatch(/\(concept [AB]\)$/);
          concepts += 1;
        }
      }
    }
    expect(concepts).toBeGreaterThan(0);
    await page.screenshot({ path: await screenshotPath('search'), fullPage: true });
    await page.close();
  });

  it('opens a hit with the words marked and goes hit to hit, keeping the query', async () => {
    const page = await open('/');
    const listed = await search(page);
    expect(listed.length).toBeGreaterThanOrEqual(3);
    await page.locator('table.list tbody th a').first().click();
    const visited: string[] = [];
    for (let i = 0; i < listed.length; i++) {
      await page.waitForURL((url) => url.pathname === `/response/${listed[i]}`);
      const url = new URL(page.url());
      expect(url.searchParams.get('q')).toBe(QUERY.trim());
      visited.push(listed[i]!);
      expect(await page.locator('.pager .position').textContent()).toBe(
        `Hit ${i + 1} of ${listed.length} for “${QUERY.trim()}”`,
      );
      const marks = await page.locator('main mark').allTextContents();
      expect(marks.length).toBeGreaterThan(0);
      for (const mark of marks) expect(TERMS).toContain(fold(mark));
      // Concept-specific questions name their concept in the conversation.
      const questions = await page.locator('.question').allTextContents();
      expect(
        questions.filter((q) => q.includes('about this concept?')).every((q) => /\(concept [AB]\)$/.test(q)),
      ).toBe(true);
      if (i < listed.length - 1) await page.keyboard.press(']');
    }
    expect(visited).toEqual(listed);
    expect(await page.locator('a[rel=next]').count()).toBe(0);
    await page.keyboard.press('[');
    await page.waitForURL((url) => url.pathname === `/response/${listed.at(-2)}`);
    expect(new URL(page.url()).searchParams.get('q')).toBe(QUERY.trim());
    await page.screenshot({ path: await screenshotPath('search-hit'), fullPage: true });
    await page.close();
  });

  it('downloads a selection as CSV that reads back row for row, formulas escaped', async () => {
    // A study whose first responses carry the replies a spreadsheet would run as formulas.
    const formula = tables.answers.find((a) => formulaPattern.test(String(a.answer)))!;
    const study = formula.study_id as string;
    const source = tables.attributes.find(
      (a) => a.response_id === formula.response_id && a.key === 'utm_source',
    )!;
    const page = await open(`/study/${encodeURIComponent(study)}`);
    await page.getByLabel('Attribute').fill(`utm_source=${source.value}`);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/attr=/);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: /as CSV/ }).click(),
    ]);
    const file = join(viewed.dir, 'selection.csv');
    await download.saveAs(file);
    const { text, records } = await readCsv(file);
    expect(text.startsWith('\ufeff')).toBe(true);
    const [header, ...rows] = records;
    const selected = tables.attributes
      .filter((a) => a.study_id === study && a.key === 'utm_source' && a.value === source.value)
      .map((a) => a.response_id);
    const column = (name: string) => header!.indexOf(name);
    expect(rows.map((row) => row[column('response_id')]).sort()).toEqual([...selected].sort());
    expect(rows.every((row) => row[column('utm_source')] === source.value)).toBe(true);
    // One column per question, concept named; every cell the answer, escaped as the runs' CSV.
    const questions = header!.filter((name) => name.includes('about this concept?'));
    expect(questions.sort()).toEqual([
      'What do you like or dislike about this concept? (concept A)',
      'What do you like or dislike about this concept? (concept B)',
    ]);
    let escaped = 0;
    for (const row of rows) {
      const id = row[column('response_id')];
      for (const answer of tables.answers.filter((a) => a.response_id === id)) {
        const name = `${answer.question}${answer.concept_id ? ` (concept ${String(answer.concept_id).slice(-1).toUpperCase()})` : ''}`;
        const cell = row[column(name)];
        const value = String(answer.answer);
        if (formulaPattern.test(value)) {
          expect(cell).toBe(`'${value}`);
          escaped += 1;
        } else expect(cell).toBe(value);
      }
    }
    expect(escaped).toBeGreaterThan(0);
    await page.close();
  });

  it('fits a 375px-wide phone, and plays video in a player of sensible size', async () => {
    const video = tables.transcript.find((t) => t.has_video === true)!;
    const hit = expectedHits()[0]!;
    const pages = [
      '/',
      `/search?q=${encodeURIComponent(QUERY)}`,
      `/study/${encodeURIComponent(String(tables.studies[0]!.study_id))}`,
      `/response/${encodeURIComponent(hit)}?q=${encodeURIComponent(QUERY)}`,
      `/response/${encodeURIComponent(String(video.response_id))}`,
    ];
    for (const [width, height] of [
      [375, 740],
      [1100, 900],
    ] as const) {
      const page = await viewed.browser.context.newPage();
      await page.setViewportSize({ width, height });
      for (const path of pages) {
        await page.goto(new URL(path, viewed.server.url).href);
        const scroll = (await page.evaluate(
          '[document.documentElement.scrollWidth, document.documentElement.clientWidth]',
        )) as [number, number];
        expect(scroll[0], `${path} at ${width}px`).toBeLessThanOrEqual(scroll[1]);
      }
      // The last page has a video: as wide as the page allows up to 36rem, never taller than 60% of it.
      const box = (await page.locator('video').first().boundingBox())!;
      expect(box.width).toBeLessThanOrEqual(Math.min(width, 576));
      expect(box.width).toBeGreaterThanOrEqual(Math.min(width * 0.8, 576) - 1);
      expect(box.height).toBeLessThanOrEqual(height * 0.6 + 1);
      await page.screenshot({ path: await screenshotPath(`video-${width}`), fullPage: true });
      await page.close();
    }
  });
});
