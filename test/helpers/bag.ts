/**
 * A bag checked by readers this project did not write: sha256sum and sha512sum on its
 * manifests, DuckDB and the Frictionless library on data/, ffprobe on every recording, and
 * Debian's chromium opening data/index.html from the file system with the network off.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import Papa from 'papaparse';
import type { Locator, Page } from 'playwright-core';
import { expect } from 'vitest';
import type { Browser } from './browser.ts';
import { validateDataPackage } from './frictionless.ts';
import { duckdb } from './readers.ts';

const run = promisify(execFile);

/** `sha256sum -c` and `sha512sum -c` inside the bag: every payload file, none failing. */
export async function checksumTools(bag: string): Promise<number> {
  let files = 0;
  for (const tool of ['sha256sum', 'sha512sum']) {
    const manifest = `manifest-${tool.replace('sum', '')}.txt`;
    const { stdout } = await run(tool, ['-c', '--strict', manifest], { cwd: bag, maxBuffer: 1 << 26 });
    const lines = stdout.trim().split('\n');
    expect(lines.every((line) => line.endsWith(': OK'))).toBe(true);
    files = lines.length;
    const tags = `tag${manifest}`;
    await run(tool, ['-c', '--strict', tags], { cwd: bag });
  }
  return files;
}

export interface RecordingListRow {
  response_id: string;
  turn: string;
  kind: string;
  in_bag: string;
  file: string;
  browser_copy: string;
  run_id: string;
  source_entry: string;
  note: string;
}

export async function recordingList(bag: string): Promise<RecordingListRow[]> {
  const text = await readFile(join(bag, 'data', 'recordings.csv'), 'utf8');
  return Papa.parse<RecordingListRow>(text, { header: true, skipEmptyLines: true }).data;
}

/** DuckDB reads every table of data/tables in both formats, with the same row counts. */
export async function duckdbCounts(bag: string): Promise<Record<string, number>> {
  const tables = ['studies', 'responses', 'questions', 'answers', 'transcript', 'attributes', 'media'];
  return duckdb(async (query) => {
    const counts: Record<string, number> = {};
    for (const table of tables) {
      const path = join(bag, 'data', 'tables', table);
      const [parquet] = await query(`select count(*)::int as n from read_parquet('${path}.parquet')`);
      const [csv] = await query(
        `select count(*)::int as n from read_csv('${path}.csv', header = true, all_varchar = true)`,
      );
      expect(csv?.n, table).toBe(parquet?.n);
      counts[table] = Number(parquet?.n);
    }
    return counts;
  });
}

export async function frictionless(bag: string): Promise<void> {
  const report = await validateDataPackage(join(bag, 'data'));
  expect(report.errors).toEqual([]);
}

interface Played {
  src: string;
  duration: number;
  played: number;
}

/**
 * data/index.html from the file system, every request that is not file:// refused and the
 * context offline; `use` gets the page, and no request left the file system.
 */
function withIndexOffline<T>(browser: Browser, bag: string, use: (page: Page) => Promise<T>): Promise<T> {
  return withPageOffline(browser, bag, 'index.html', use);
}

/** A page of the bag's data/ (`path` relative to it) opened offline; nothing outside file:// is asked for. */
async function withPageOffline<T>(
  browser: Browser,
  bag: string,
  path: string,
  use: (page: Page) => Promise<T>,
): Promise<T> {
  const page = await browser.context.newPage();
  await browser.context.setOffline(true);
  const outside: string[] = [];
  await page.route(/^(?!file:)/, (route) => {
    outside.push(route.request().url());
    return route.abort();
  });
  try {
    await page.goto(pathToFileURL(join(bag, 'data', ...path.split('/'))).href);
    const result = await use(page);
    expect(outside).toEqual([]);
    return result;
  } finally {
    await page.close();
    await browser.context.setOffline(false);
  }
}

/** Plays a media element muted until its time passes: its src, duration, and the time reached. */
function play(element: Locator): Promise<Played> {
  return element.evaluate(
    (node) =>
      new Promise<Played>((resolve, reject) => {
        const media = node as unknown as {
          src: string;
          duration: number;
          currentTime: number;
          muted: boolean;
          play(): Promise<void>;
          addEventListener(type: string, listener: () => void): void;
        };
        media.muted = true;
        media.addEventListener('timeupdate', () => {
          if (media.currentTime > 0)
            resolve({ src: media.src, duration: media.duration, played: media.currentTime });
        });
        media.addEventListener('error', () => reject(new Error(`${media.src} does not play`)));
        media.play().catch(reject);
      }),
  );
}

/**
 * index.html offline lists `responses` conversations, and its first recording of `kind` plays
 * (its metadata loads and time passes).
 */
export async function openIndexOffline(
  browser: Browser,
  bag: string,
  responses: number,
  kind: 'audio' | 'video',
): Promise<{ conversations: number; duration: number; played: number }> {
  return withIndexOffline(browser, bag, async (page) => {
    const conversations = await page.locator('section.conversation').count();
    expect(await page.locator('ol.conversations > li').count()).toBe(responses);
    const { duration, played } = await play(page.locator(`${kind}[data-kind="${kind}"]`).first());
    return { conversations, duration, played };
  });
}

/** What a page of the bag (relative to data/) offers for its recordings: its players' sources and its download links. */
export function recordingsOnPage(
  browser: Browser,
  bag: string,
  path: string,
): Promise<{ players: string[]; downloads: string[] }> {
  return withPageOffline(browser, bag, path, async (page) => ({
    players: await page
      .locator('audio[src], video[src]')
      .evaluateAll((elements) => elements.map((element) => element.getAttribute('src') ?? '')),
    downloads: await page
      .locator('a[download]')
      .evaluateAll((elements) => elements.map((element) => element.getAttribute('href') ?? '')),
  }));
}

/** Every player of recordings of `kind` in index.html's first conversation that has one, played offline. */
export async function playConversationOffline(
  browser: Browser,
  bag: string,
  kind: string,
): Promise<Played[]> {
  return withIndexOffline(browser, bag, async (page) => {
    const conversation = page.locator('section.conversation', { has: page.locator(`[data-kind="${kind}"]`) });
    const players = conversation.first().locator(`[data-kind="${kind}"]`);
    const played: Played[] = [];
    for (let i = 0; i < (await players.count()); i++) played.push(await play(players.nth(i)));
    return played;
  });
}
