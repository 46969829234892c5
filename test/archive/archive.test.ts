/**
 * `study-export archive` on outputs of the sandbox: a bag of an audio study (a folder), of a
 * video study with MP4 and HLS (zip and tar), each checked by readers the project did not
 * write (sha256sum/sha512sum -c, unzip -t, tar -t, DuckDB, Frictionless, ffprobe, chromium by
 * file:// offline); an HLS-only study whose MPEG-TS recordings get MP4 copies chromium plays;
 * the same output archived twice gives the same bytes; `verify` names a
 * tampered and a missing file; a recording that failed is listed and the command exits 3.
 */
import { execFile } from 'node:child_process';
import { appendFile, mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveOutput, verifyBag } from '../../src/archive/index.ts';
import { OutputReader } from '../../src/reader/index.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import {
  checksumTools,
  duckdbCounts,
  frictionless,
  openIndexOffline,
  playConversationOffline,
  recordingList,
  recordingsOnPage,
} from '../helpers/bag.ts';
import {
  type Browser,
  ffprobeDuration as ffprobeEntryDuration,
  ffprobeFileDuration,
  ffprobeHlsDuration,
} from '../helpers/browser.ts';
import { startBrowserRun } from '../helpers/browser-run.ts';
import { runCli } from '../helpers/cli.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';

const run = promisify(execFile);

let sandbox: Sandbox;
let browser: Browser;
let out: string;
let stop: () => Promise<void>;
const studies: Record<'audio' | 'video', { id: string; link_id: string; responses: number }> = {} as never;

beforeAll(async () => {
  ({
    sandbox,
    browser,
    dir: out,
    stop,
  } = await startBrowserRun({
    sandbox: { seed: 11, studies: 4, responses: 3 },
    runs: {
      exports: { media: { enabled: true, video: 'both' } },
      'exports-hls': { media: { enabled: true, video: 'hls' } },
    },
  }));
  const output = await OutputReader.open(join(out, 'exports', 'test'));
  for (const study of await output.studies()) {
    const responses = await (await output.study(study.study_id)).all('responses');
    const modality = responses.find((r) => r.modality !== 'text')?.modality as 'audio' | 'video' | undefined;
    if (modality)
      studies[modality] = { id: study.study_id, link_id: study.link_id, responses: responses.length };
  }
}, 120_000);
afterAll(() => stop?.());

const outputDir = () => join(out, 'exports', 'test');
const hlsOutputDir = () => join(out, 'exports-hls', 'test');

/**
 * Every recording of the bag: ffprobe's duration equals that of its source in the run's
 * media.zip, and a browser copy's that of the file it copies.
 */
async function durationsMatch(bag: string, output = outputDir()): Promise<number> {
  let checked = 0;
  for (const row of await recordingList(bag)) {
    expect(row.in_bag, `${row.response_id} ${row.turn} ${row.kind}`).toBe('yes');
    const duration = await ffprobeFileDuration(join(bag, 'data', row.file));
    if (row.browser_copy)
      expect(
        Math.abs((await ffprobeFileDuration(join(bag, 'data', row.browser_copy))) - duration),
      ).toBeLessThan(0.05);
    const zip = join(output, 'runs', row.run_id, 'media.zip');
    const source =
      row.kind === 'hls'
        ? await ffprobeHlsDuration(zip, row.source_entry)
        : await ffprobeEntryDuration(zip, row.source_entry);
    expect(Math.abs(duration - source), row.file).toBeLessThan(0.05);
    checked++;
  }
  return checked;
}

describe('study-export archive', () => {
  it('bags an audio study as a folder that every reader accepts, and the same bytes twice', async () => {
    const to = join(out, 'bags-audio');
    const result = await archiveOutput({
      output: outputDir(),
      studies: [studies.audio.link_id],
      to,
      form: 'folder',
      info: { source_organization: 'Example University', contact_email: 'archive@example.org' },
    });
    expect(result.status).toBe('complete');
    const bag = result.bags[0]!.location;
    expect(bag).toBe(join(to, studies.audio.link_id));
    const info = await readFile(join(bag, 'bag-info.txt'), 'utf8');
    expect(info).toContain(`External-Identifier: ${studies.audio.id}\n`);
    expect(info).toContain('Source-Organization: Example University\n');
    expect(info).toMatch(/^Payload-Oxum: \d+\.\d+$/m);
    expect(info).toMatch(/^Bagging-Date: \d{4}-\d\d-\d\d$/m);
    expect(await readFile(join(bag, 'bagit.txt'), 'utf8')).toBe(
      'BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n',
    );
    expect(await checksumTools(bag)).toBe(result.bags[0]!.files);
    const counts = await duckdbCounts(bag);
    expect(counts.responses).toBe(studies.audio.responses);
    expect(counts.studies).toBe(1);
    await frictionless(bag);
    expect(await durationsMatch(bag)).toBeGreaterThan(0);
    const page = await openIndexOffline(browser, bag, studies.audio.responses, 'audio');
    expect(page.conversations).toBe(studies.audio.responses);
    expect(page.duration).toBeGreaterThan(0);
    expect((await verifyBag(bag)).ok).toBe(true);

    const again = join(out, 'bags-audio-again');
    await archiveOutput({
      output: outputDir(),
      studies: [studies.audio.id],
      to: again,
      form: 'folder',
      info: { source_organization: 'Example University', contact_email: 'archive@example.org' },
    });
    for (const file of [
      'manifest-sha256.txt',
      'manifest-sha512.txt',
      'bag-info.txt',
      'tagmanifest-sha512.txt',
    ])
      expect(await readFile(join(again, studies.audio.link_id, file), 'utf8'), file).toBe(
        await readFile(join(bag, file), 'utf8'),
      );
  });

  it('bags a video study with MP4 and HLS as a zip and a tar, each one playable file per recording', async () => {
    const to = join(out, 'bags-video');
    const zipped = await archiveOutput({
      output: outputDir(),
      studies: [studies.video.id],
      to,
      form: 'zip',
      info: {},
    });
    const tarred = await archiveOutput({
      output: outputDir(),
      studies: [studies.video.id],
      to,
      form: 'tar',
      info: {},
    });
    const zip = zipped.bags[0]!.location;
    const tar = tarred.bags[0]!.location;
    expect(zip).toBe(join(to, `${studies.video.link_id}.zip`));
    await run('unzip', ['-tq', zip]);
    const { stdout: listing } = await run('tar', ['-tf', tar]);
    expect(listing.split('\n').filter((line) => line && !line.endsWith('/')).length).toBe(
      zipped.bags[0]!.files + 6,
    );
    expect((await verifyBag(zip)).ok).toBe(true);
    expect((await verifyBag(tar)).ok).toBe(true);
    // The zip flags its names as UTF-8 (general purpose bit 11) in every central header.
    const bytes = await readFile(zip);
    for (let at = bytes.indexOf('PK\u0001\u0002'); at >= 0; at = bytes.indexOf('PK\u0001\u0002', at + 4))
      expect(bytes.readUInt16LE(at + 8) & 0x0800).toBe(0x0800);

    const unzipped = join(out, 'unzipped');
    await mkdir(unzipped, { recursive: true });
    await run('unzip', ['-q', zip, '-d', unzipped]);
    const bag = join(unzipped, studies.video.link_id);
    await checksumTools(bag);
    await duckdbCounts(bag);
    await frictionless(bag);
    const list = await recordingList(bag);
    expect(new Set(list.map((row) => row.kind))).toEqual(new Set(['video', 'hls']));
    expect(list.filter((row) => row.kind === 'hls').every((row) => row.file.endsWith('.ts'))).toBe(true);
    // Browsers play the MP4 recording of the same turn: no copy of the MPEG-TS file is made.
    expect(list.every((row) => row.browser_copy === '')).toBe(true);
    await durationsMatch(bag);
    const page = await openIndexOffline(browser, bag, studies.video.responses, 'video');
    expect(page.duration).toBeGreaterThan(0);
    // No player is offered for an MPEG-TS file, which no browser plays: it is a download beside
    // the MP4 recording of its turn, on index.html and on each conversation's page.
    const tsFiles = list.filter((row) => row.kind === 'hls').map((row) => row.file);
    const index = await recordingsOnPage(browser, bag, 'index.html');
    expect(index.players.length).toBe(list.filter((row) => row.kind === 'video').length);
    expect(index.players.every((src) => src.endsWith('.mp4'))).toBe(true);
    expect(index.downloads.sort()).toEqual(tsFiles.sort());
    const first = (await readdir(join(bag, 'data', 'conversations'))).find((name) => name.endsWith('.html'))!;
    const own = await recordingsOnPage(browser, bag, `conversations/${first}`);
    expect(own.players.length).toBeGreaterThan(0);
    expect(own.players.every((src) => src.endsWith('.mp4'))).toBe(true);
    expect(own.downloads.length).toBe(own.players.length);
    expect(own.downloads.every((href) => href.startsWith('../') && href.endsWith('.ts'))).toBe(true);

    const untarred = join(out, 'untarred');
    await mkdir(untarred, { recursive: true });
    await run('tar', ['-xf', tar, '-C', untarred]);
    await run('diff', ['-r', bag, join(untarred, studies.video.link_id)]);
  });

  it('gives each MPEG-TS recording of an HLS-only study an MP4 copy that chromium plays offline', async () => {
    const bagOf = async (to: string) =>
      (
        await archiveOutput({
          output: hlsOutputDir(),
          studies: [studies.video.id],
          to,
          form: 'folder',
          info: {},
        })
      ).bags[0]!.location;
    const bag = await bagOf(join(out, 'bags-hls'));
    await checksumTools(bag);
    expect((await verifyBag(bag)).ok).toBe(true);
    const list = await recordingList(bag);
    expect(list.length).toBeGreaterThan(0);
    for (const row of list) {
      expect(row.kind).toBe('hls');
      expect(row.file).toMatch(/\.ts$/);
      expect(row.browser_copy).toBe(row.file.replace(/\.ts$/, '.mp4'));
    }
    expect(await durationsMatch(bag, hlsOutputDir())).toBe(list.length);

    // Every HLS recording of one conversation plays from its copy, as long as the joined file.
    const played = await playConversationOffline(browser, bag, 'hls');
    expect(played.length).toBeGreaterThan(1);
    for (const { src, duration, played: time } of played) {
      expect(src).toMatch(/-hls\.mp4$/);
      const file = list.find((row) => src.endsWith(row.browser_copy))!.file;
      expect(Math.abs(duration - (await ffprobeFileDuration(join(bag, 'data', file)))), file).toBeLessThan(
        0.1,
      );
      expect(time).toBeGreaterThan(0);
    }

    const again = await bagOf(join(out, 'bags-hls-again'));
    for (const file of ['manifest-sha256.txt', 'manifest-sha512.txt', 'bag-info.txt'])
      expect(await readFile(join(again, file), 'utf8'), file).toBe(await readFile(join(bag, file), 'utf8'));
  });

  it('names a tampered byte and a missing file, and lists a failed recording with exit 3', async () => {
    const to = join(out, 'bags-broken');
    await archiveOutput({ output: outputDir(), studies: [studies.audio.id], to, form: 'folder', info: {} });
    const bag = join(to, studies.audio.link_id);
    const [first, second] = (await recordingList(bag)).map((row) => row.file);
    await appendFile(join(bag, 'data', first!), 'x');
    await rm(join(bag, 'data', second!));
    const verified = await runCli(['verify', bag]);
    expect(verified.code).toBe(1);
    expect(verified.stdout).toContain(`problem: data/${first}: its sha256 differs`);
    expect(verified.stdout).toContain(
      `problem: data/${second}: listed in manifest-sha256.txt but missing from the bag`,
    );
    expect(verified.stdout).toContain('Payload-Oxum');

    const failing = sandbox.addResponse(studies.audio.link_id);
    sandbox.overrideNext({ listener: 'storage' }, { status: 404, body: 'gone' }, 1000);
    await runAgainst(
      sandbox,
      sandboxConfig(sandbox, join(out, 'exports'), { media: { enabled: true, video: 'both' } }),
    );
    const cli = await runCli([
      'archive',
      outputDir(),
      '--study',
      studies.audio.link_id,
      '--to',
      join(out, 'bags-partial'),
      '--zip',
    ]);
    expect(cli.code, cli.stderr).toBe(3);
    expect(cli.stdout).toContain(`missing: response ${failing}, turn`);
    expect(cli.stdout).toMatch(/the download failed: .*404/);
    const zip = join(out, 'bags-partial', `${studies.audio.link_id}.zip`);
    const check = await runCli(['verify', zip]);
    expect(check.code, check.stderr).toBe(3);
    expect(check.stdout).toContain(`note: recording missing from the bag: response ${failing}`);
  });
});
