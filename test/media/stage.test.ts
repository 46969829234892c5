/**
 * The media stage against the sandbox over real HTTP: files archived byte for byte, links
 * refreshed when old or refused, failures reported without signed URLs, HLS rewritten to
 * local names, and no credential ever sent to the media hosts.
 */

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SingleResponse } from '../../src/api/resources.ts';
import type { VideoMode } from '../../src/config/schema.ts';
import { HashingThread } from '../../src/media/hashing-thread.ts';
import { MemoryBudget } from '../../src/media/memory-budget.ts';
import { createMediaStage, type MediaStageOptions } from '../../src/media/stage.ts';
import { type MediaArchive, openMediaArchive } from '../../src/output/codecs/zip-writer.ts';
import type { MediaOutcome } from '../../src/records.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { recordWrites } from '../../src/storage/recorded.ts';
import { expectMediaRequestsKeyless } from '../helpers/environment.ts';
import { localFile } from '../helpers/storage.ts';
import { readZip, type ZipEntryInfo } from '../helpers/zip.ts';

let sandbox: Sandbox;
let dir: string;
let zipPath: string;
let archive: MediaArchive;

const AUDIO = 'media-audio';
const VIDEO = 'media-video';

beforeAll(async () => {
  sandbox = await startSandbox({ studies: 0, responses: 0 });
  sandbox.addStudy({ link_id: AUDIO, modality: 'audio', responses: 2 });
  sandbox.addStudy({ link_id: VIDEO, modality: 'video', responses: 1 });
});
afterAll(async () => {
  await sandbox.close();
});
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'media-stage-'));
  zipPath = join(dir, 'media.zip');
  archive = await openMediaArchive(...localFile(zipPath));
  sandbox.setFaults(null);
  sandbox.requests.length = 0;
});
afterEach(async () => {
  await archive.abort();
  await rm(dir, { recursive: true, force: true });
});

async function fetchDetail(linkId: string, responseId: string): Promise<SingleResponse> {
  const url = `${sandbox.base_url}/api/public/responses/${encodeURIComponent(linkId)}/${encodeURIComponent(responseId)}`;
  const response = await fetch(url, { headers: { 'x-api-key': sandbox.api_key } });
  expect(response.status).toBe(200);
  return SingleResponse.parse(await response.json());
}

async function sha256Of(url: string): Promise<string> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return createHash('sha256')
    .update(Buffer.from(await response.arrayBuffer()))
    .digest('hex');
}

function firstResponse(linkId: string): string {
  const id = sandbox.responses(linkId)[0]?.id;
  if (!id) throw new Error(`no response in ${linkId}`);
  return id;
}

function stage(overrides: Partial<MediaStageOptions> = {}) {
  return createMediaStage({
    archive,
    tmpDir: join(dir, 'tmp'),
    concurrency: 3,
    video: 'mp4',
    retries: 3,
    timeoutMs: 5_000,
    backoff: { baseMs: 1 },
    now: () => sandbox.clock.now(),
    ...overrides,
  });
}

/** Archives one response with a refresh that re-fetches its detail and counts calls. */
async function archiveOne(
  media: ReturnType<typeof stage>,
  linkId: string,
  responseId: string,
  detail?: SingleResponse,
  /** How long the links have been out before the stage gets them (the sandbox clock moves). */
  linkAgeMs = 0,
) {
  const first = detail ?? (await fetchDetail(linkId, responseId));
  const fetchedAt = sandbox.clock.now();
  sandbox.clock.advance(linkAgeMs);
  let refreshCalls = 0;
  const outcomes = await media.archiveResponse(
    { study_id: `id-${linkId}`, link_id: linkId, response_id: responseId },
    first,
    fetchedAt,
    async () => {
      refreshCalls++;
      return fetchDetail(linkId, responseId);
    },
  );
  return { outcomes, refreshCalls, detail: first };
}

async function finishAndRead(): Promise<Map<string, ZipEntryInfo>> {
  await archive.finish();
  if (existsSync('/usr/bin/unzip')) {
    expect(execFileSync('/usr/bin/unzip', ['-t', zipPath], { encoding: 'utf8' })).toContain(
      'No errors detected',
    );
  }
  const entries = await readZip(zipPath);
  for (const entry of entries) expect(entry.compressionMethod).toBe(0);
  return new Map(entries.map((entry) => [entry.name, entry]));
}

function archived(outcomes: MediaOutcome[]): MediaOutcome[] {
  return outcomes.filter((o) => o.status === 'archived');
}

/** A budget that counts the bodies it took into memory and those it sent to temporary files. */
class CountingBudget extends MemoryBudget {
  taken = 0;
  refused = 0;

  override take(bytes: number): Buffer | null {
    const buffer = super.take(bytes);
    if (buffer) this.taken++;
    else this.refused++;
    return buffer;
  }
}

describe('media stage on the sandbox', () => {
  it.each([
    ['kept in memory', () => new CountingBudget(64 * 1024 * 1024, 8 * 1024 * 1024), 'taken', false],
    [
      'kept in memory, hashed on the hashing thread',
      () => new CountingBudget(64 * 1024 * 1024, 8 * 1024 * 1024),
      'taken',
      true,
    ],
    ['through temporary files', () => new CountingBudget(0, 0), 'refused', false],
    [
      'through temporary files, hashed on the hashing thread',
      () => new CountingBudget(0, 0),
      'refused',
      true,
    ],
  ] as const)(
    'archives every audio and video file, stored, with the bytes the hosts serve (%s)',
    async (_, budget, path, onThread) => {
      const memory = budget();
      const hashing = onThread ? new HashingThread() : undefined;
      const recorded = recordWrites(new LocalStorage(dir));
      if (hashing) {
        // The zip's own SHA-256 and the entries' CRC-32 come from the thread too (unzip -t checks them).
        await archive.abort();
        archive = await openMediaArchive(recorded, 'media.zip', { hashing });
      }
      const media = stage({ memory, ...(hashing ? { hashing } : {}) });
      const expected = new Map<string, string>();
      const all: MediaOutcome[] = [];
      for (const linkId of [AUDIO, VIDEO]) {
        for (const { id } of sandbox.responses(linkId)) {
          const detail = await fetchDetail(linkId, id);
          const { outcomes } = await archiveOne(media, linkId, id, detail);
          for (const outcome of outcomes) {
            const row = detail.transcript[outcome.turn - 1];
            const url = outcome.kind === 'audio' ? row?.audio : row?.video?.mp4_url;
            expected.set(outcome.file ?? '', await sha256Of(url ?? ''));
          }
          all.push(...outcomes);
        }
      }
      expect(all.length).toBeGreaterThan(2);
      expect(archived(all)).toHaveLength(all.length);
      expect(new Set(all.map((o) => o.kind))).toEqual(new Set(['audio', 'video']));
      const entries = await finishAndRead();
      expect(entries.size).toBe(all.length);
      for (const outcome of all) {
        expect(outcome.file).toMatch(/^media-(audio|video)\/[0-9a-f-]+\/\d+-(audio\.mp3|video\.mp4)$/);
        const entry = entries.get(outcome.file ?? '');
        expect(entry?.sha256).toBe(outcome.sha256);
        expect(entry?.sha256).toBe(expected.get(outcome.file ?? ''));
        expect(entry?.size).toBe(outcome.bytes);
      }
      expect(media.counters()).toMatchObject({ files: all.length, failed: 0, refreshes: 0 });
      expect(await readdir(join(dir, 'tmp'))).toEqual([]);
      expect(memory.freeBytes).toBe(memory.totalBytes);
      // Buffers given back were handed out again: far fewer allocated than bodies kept in memory.
      if (path === 'taken') expect(memory.allocations).toBeLessThan(all.length / 2);
      // Every body went the way this case is about.
      expect(memory[path]).toBe(all.length);
      expect(memory.taken + memory.refused).toBe(all.length);
      expect(expectMediaRequestsKeyless(sandbox)).toBeGreaterThan(0);
      if (hashing) {
        const zipSha256 = createHash('sha256')
          .update(await readFile(zipPath))
          .digest('hex');
        expect(recorded.written()).toEqual([
          expect.objectContaining({ path: 'media.zip', sha256: zipSha256 }),
        ]);
        await hashing.close();
      }
    },
  );

  it('refreshes once when the links expired mid-run (403), then archives everything', async () => {
    const media = stage({ maxLinkAgeMs: 24 * 60 * 60 * 1000 });
    const responseId = firstResponse(AUDIO);
    const { outcomes, refreshCalls } = await archiveOne(media, AUDIO, responseId, undefined, 61 * 60 * 1000);
    expect(outcomes.length).toBeGreaterThan(1);
    expect(archived(outcomes)).toHaveLength(outcomes.length);
    expect(sandbox.requests.some((r) => r.listener === 'storage' && r.status === 403)).toBe(true);
    // Every job met a 403, yet one single-response call renewed them all.
    expect(refreshCalls).toBe(1);
    expect(media.counters().refreshes).toBe(1);
    const entries = await finishAndRead();
    expect(entries.size).toBe(outcomes.length);
  });

  it('refreshes links older than the maximum age before using them', async () => {
    const media = stage();
    const responseId = firstResponse(AUDIO);
    // Still valid (under an hour) but past the 50-minute default: renewed before use.
    const { outcomes, refreshCalls } = await archiveOne(media, AUDIO, responseId, undefined, 51 * 60 * 1000);
    expect(archived(outcomes)).toHaveLength(outcomes.length);
    expect(refreshCalls).toBe(1);
    expect(media.counters().refreshes).toBe(1);
    // The old links were never sent: every storage request used a renewed one.
    const storage = sandbox.requests.filter((r) => r.listener === 'storage');
    expect(storage.length).toBe(outcomes.length);
    expect(storage.every((r) => r.status === 200)).toBe(true);
  });

  it('refreshes on a single 403 from storage and archives the file', async () => {
    const media = stage();
    const responseId = firstResponse(AUDIO);
    sandbox.overrideNext(
      { listener: 'storage' },
      { status: 403, contentType: 'application/xml', body: '<Error/>' },
    );
    const { outcomes, refreshCalls } = await archiveOne(media, AUDIO, responseId);
    expect(archived(outcomes)).toHaveLength(outcomes.length);
    expect(refreshCalls).toBe(1);
    expect(media.counters().refreshes).toBe(1);
  });

  it('lists a file that keeps failing as failed, with a reason and no query string, and goes on', async () => {
    // Exactly the attempts it gets (1 + 2 retries): overrides outlive a test otherwise.
    const media = stage({ retries: 2 });
    const responseId = firstResponse(AUDIO);
    const detail = await fetchDetail(AUDIO, responseId);
    const firstAudio = detail.transcript.findIndex((row) => row.audio);
    const audioUrl = new URL(detail.transcript[firstAudio]?.audio ?? '');
    sandbox.overrideNext(
      { listener: 'storage', pathIncludes: audioUrl.pathname },
      { status: 500, body: 'boom' },
      3,
    );
    const { outcomes } = await archiveOne(media, AUDIO, responseId, detail);
    const failed = outcomes.filter((o) => o.status === 'failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ turn: firstAudio + 1, kind: 'audio', file: null, sha256: null });
    expect(failed[0]?.error).toContain('500');
    expect(failed[0]?.error).toContain(audioUrl.pathname);
    expect(failed[0]?.error).not.toMatch(/[?]|sig=|expires=/);
    expect(archived(outcomes)).toHaveLength(outcomes.length - 1);
    expect(media.counters()).toMatchObject({ failed: 1 });
    expect(Object.values(media.counters().retries).reduce((a, b) => a + b, 0)).toBe(2);
    const entries = await finishAndRead();
    expect(entries.size).toBe(outcomes.length - 1);
    expect(await readdir(join(dir, 'tmp'))).toEqual([]);
  });

  it('retries dropped, truncated and failing responses until the bytes are right', async () => {
    const media = stage({ retries: 10 });
    const responseId = firstResponse(AUDIO);
    const detail = await fetchDetail(AUDIO, responseId);
    const expected = new Map<number, string>();
    for (const [i, row] of detail.transcript.entries())
      if (row.audio) expected.set(i + 1, await sha256Of(row.audio));
    sandbox.setFaults('media_truncate=0.3,media_reset=0.2,media_5xx=0.2');
    const { outcomes } = await archiveOne(media, AUDIO, responseId, detail);
    sandbox.setFaults(null);
    expect(archived(outcomes)).toHaveLength(outcomes.length);
    for (const outcome of outcomes) expect(outcome.sha256).toBe(expected.get(outcome.turn));
    expect(Object.keys(media.counters().retries).length).toBeGreaterThan(0);
    const entries = await finishAndRead();
    for (const outcome of outcomes) expect(entries.get(outcome.file ?? '')?.sha256).toBe(outcome.sha256);
  });

  it('follows a redirect off the storage host without credentials', async () => {
    const media = stage();
    const responseId = firstResponse(AUDIO);
    const detail = await fetchDetail(AUDIO, responseId);
    const target = detail.transcript.find((row) => row.audio)?.audio ?? '';
    const path = new URL(target).pathname;
    sandbox.overrideNext(
      { listener: 'storage', pathIncludes: path },
      { status: 302, body: '', headers: { location: target } },
    );
    const { outcomes } = await archiveOne(media, AUDIO, responseId, detail);
    expect(archived(outcomes)).toHaveLength(outcomes.length);
    expect(sandbox.requests.filter((r) => r.listener === 'storage' && r.status === 302)).toHaveLength(1);
    expect(expectMediaRequestsKeyless(sandbox)).toBeGreaterThan(0);
  });

  it.each<[VideoMode, string[], MemoryBudget | undefined]>([
    ['hls', ['hls'], undefined],
    ['both', ['video', 'hls'], undefined],
    ['hls', ['hls'], new MemoryBudget(0, 0)],
  ])(
    'video: %s archives the playlist rewritten to local segments (budget %o)',
    async (mode, kinds, memory) => {
      const media = stage({ video: mode, ...(memory ? { memory } : {}) });
      const responseId = firstResponse(VIDEO);
      const detail = await fetchDetail(VIDEO, responseId);
      const { outcomes } = await archiveOne(media, VIDEO, responseId, detail);
      expect(archived(outcomes)).toHaveLength(outcomes.length);
      expect(new Set(outcomes.map((o) => o.kind))).toEqual(new Set(kinds));
      const entries = await finishAndRead();
      for (const outcome of outcomes.filter((o) => o.kind === 'hls')) {
        expect(outcome.file).toMatch(/\/\d+-hls\/index\.m3u8$/);
        expect(outcome.content_type).toBe('application/vnd.apple.mpegurl');
        const playlist = entries.get(outcome.file ?? '');
        expect(playlist?.sha256).toBe(outcome.sha256);
        const text = playlist?.text ?? '';
        expect(text).toContain('#EXTM3U');
        expect(text).not.toMatch(/sig=|expires=|https?:/);
        const segments = text.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
        expect(segments).toEqual(['00001.ts', '00002.ts']);
        // Each archived segment is the segment the stream host serves.
        const streamUrl = detail.transcript[outcome.turn - 1]?.video?.stream_url ?? '';
        const served = await (await fetch(streamUrl)).text();
        const servedSegments = served.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
        const folder = (outcome.file ?? '').replace(/index\.m3u8$/, '');
        for (const [i, name] of segments.entries()) {
          const entry = entries.get(folder + name);
          expect(entry?.sha256).toBe(await sha256Of(new URL(servedSegments[i] ?? '', streamUrl).href));
        }
      }
      expect(expectMediaRequestsKeyless(sandbox)).toBeGreaterThan(0);
    },
  );

  it('gives hostile ids safe entry names that a strict unzipper accepts', async () => {
    const media = stage({ video: 'both' });
    const linkId = '../../etc/passwd';
    const responseIds = ['/abs', 'a\\b:c', `tab\tnl\n${'y'.repeat(300)}`, 'ответ 🎤'];
    sandbox.addStudy({ link_id: linkId, modality: 'video', responseIds });
    const all: MediaOutcome[] = [];
    for (const id of responseIds) all.push(...(await archiveOne(media, linkId, id)).outcomes);
    expect(archived(all)).toHaveLength(all.length);
    // readZip opens with strictFileNames: absolute paths, ".." and backslashes would throw.
    const entries = await finishAndRead();
    const files = new Set(all.map((o) => o.file));
    expect(files.size).toBe(all.length);
    for (const name of entries.keys()) {
      expect(name).not.toMatch(/^\/|\\|[\u0000-\u001f:]|(^|\/)\.\.?(\/|$)/);
      // Every byte but [a-z0-9_.-] escaped as ~XX, a leading dot too (src/names.ts).
      expect(name.split('/')[0]).toBe('~2E.~2F..~2Fetc~2Fpasswd');
    }
    const russian = `/${[...Buffer.from('ответ 🎤')].map((b) => `~${b.toString(16).toUpperCase()}`).join('')}/`;
    expect([...entries.keys()].some((name) => name.includes(russian))).toBe(true);
  });

  it('renews the playlist when a segment link is refused', async () => {
    const media = stage({ video: 'hls' });
    const responseId = firstResponse(VIDEO);
    sandbox.overrideNext({ listener: 'stream', pathIncludes: 'seg1.ts' }, { status: 403, body: 'expired' });
    const { outcomes, refreshCalls } = await archiveOne(media, VIDEO, responseId);
    expect(archived(outcomes)).toHaveLength(outcomes.length);
    expect(refreshCalls).toBe(1);
    const entries = await finishAndRead();
    expect([...entries.keys()].filter((name) => name.endsWith('.ts')).length).toBe(2 * outcomes.length);
  });
});
