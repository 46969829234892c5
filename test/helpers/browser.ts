/**
 * A real browser for the viewer's and report's tests: Debian's chromium (apt; .ci/run installs
 * it when missing), driven by playwright-core, which downloads nothing. A fresh profile every
 * launch, nothing that reaches out to the network on its own. Screenshots go under
 * test-output/ (ignored by git) for a person to look at.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';

const run = promisify(execFile);

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const screenshotDir = join(process.cwd(), 'test-output', 'view');

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A new page at `path` of the server at `base`, which answered 200. */
export async function openPage(browser: Browser, base: string, path: string): Promise<Page> {
  const page = await browser.context.newPage();
  const response = await page.goto(new URL(path, base).href);
  expect(response?.status()).toBe(200);
  return page;
}

export async function launchBrowser(): Promise<Browser> {
  const profile = await mkdtemp(join(tmpdir(), 'study-export-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--autoplay-policy=no-user-gesture-required',
    ],
    viewport: { width: 1100, height: 900 },
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** Where a page's screenshot goes: test-output/view/<name>.png (printed for a person). */
export async function screenshotPath(name: string): Promise<string> {
  await mkdir(screenshotDir, { recursive: true });
  const path = join(screenshotDir, `${name}.png`);
  console.log(`screenshot: ${path}`);
  return path;
}

/** One entry of a zip as unzip extracts it. */
export async function extractEntry(zipPath: string, entry: string): Promise<Buffer> {
  const { stdout } = await run('unzip', ['-p', zipPath, entry], { encoding: 'buffer', maxBuffer: 1 << 30 });
  return stdout;
}

/** The duration ffprobe reports for a media file or playlist, in seconds. */
export async function ffprobeFileDuration(path: string): Promise<number> {
  const { stdout } = await run('ffprobe', [
    '-v',
    'error',
    '-show_entries',
    'format=duration',
    '-of',
    'default=noprint_wrappers=1:nokey=1',
    path,
  ]);
  return Number(stdout.trim());
}

/** The duration ffprobe reports for an HLS playlist of a zip, its folder extracted with unzip. */
export async function ffprobeHlsDuration(zipPath: string, playlist: string): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'study-export-ffprobe-'));
  try {
    const folder = playlist.slice(0, playlist.lastIndexOf('/'));
    await run('unzip', ['-q', zipPath, `${folder}/*`, '-d', dir]);
    return await ffprobeFileDuration(join(dir, playlist));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The duration ffprobe reports for one entry of a zip, extracted with unzip. */
export async function ffprobeDuration(zipPath: string, entry: string): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'study-export-ffprobe-'));
  try {
    const file = join(dir, `media.${entry.split('.').at(-1)}`);
    await run('sh', ['-c', 'unzip -p "$1" "$2" > "$3"', 'sh', zipPath, entry, file]);
    return await ffprobeFileDuration(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
