import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { mp3Problems, mp4Problems, tagOf, tsProblems } from '../helpers/media-formats.ts';
import { api, type Detail, detailOf, type Item, studyOf } from '../helpers/sandbox.ts';

const fixture = (name: string) =>
  readFileSync(new URL(`../../src/sandbox/fixtures/${name}`, import.meta.url));

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 7 });
});
afterAll(async () => {
  await sandbox.close();
});

/** The detail of the study of `modality`'s response number `index`. */
async function detailOfKind(
  target: Sandbox,
  modality: 'text' | 'audio' | 'video',
  index = 0,
): Promise<Detail> {
  const linkId = studyOf(target, modality);
  return detailOf(target, linkId, target.responses(linkId)[index]!.id);
}

async function fetchBytes(url: string, init?: RequestInit) {
  const response = await fetch(url, init);
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    bytes: Buffer.from(await response.arrayBuffer()),
    response,
  };
}

function tamper(url: string, change: (u: URL) => void): string {
  const parsed = new URL(url);
  change(parsed);
  return parsed.toString();
}

describe('transcripts and media links', () => {
  it('gives text studies no media, audio studies audio URLs and video studies video objects', async () => {
    const text = await detailOfKind(sandbox, 'text');
    expect(text.transcript.every((row) => row.audio === null && row.video === null)).toBe(true);

    const audio = await detailOfKind(sandbox, 'audio');
    expect(audio.transcript.every((row) => row.video === null)).toBe(true);
    const audioUrls = audio.transcript.map((row) => row.audio).filter((url): url is string => url !== null);
    expect(audioUrls.length).toBeGreaterThan(0);
    for (const url of audioUrls) expect(url.startsWith(`${sandbox.storage_url}/`)).toBe(true);

    const video = await detailOfKind(sandbox, 'video');
    expect(video.transcript.every((row) => row.audio === null)).toBe(true);
    const videos = video.transcript.flatMap((row) => (row.video ? [row.video] : []));
    expect(videos.length).toBeGreaterThan(0);
    for (const v of videos) {
      expect(v.mp4_url.startsWith(`${sandbox.stream_url}/`)).toBe(true);
      expect(v.stream_url.startsWith(`${sandbox.stream_url}/`)).toBe(true);
    }
  });

  it('serves signed audio with its content type, without any api key', async () => {
    const url = (await detailOfKind(sandbox, 'audio')).transcript.find((row) => row.audio)!.audio!;
    expect(url).toMatch(/\?expires=\d+&sig=[0-9a-f]{64}$/);
    const got = await fetchBytes(url);
    expect(got.status).toBe(200);
    expect(got.type).toBe('audio/mpeg');
    expect(mp3Problems(got.bytes, tagOf(url), fixture('tone.mp3'))).toEqual([]);
    expect(got.response.headers.get('content-length')).toBe(String(got.bytes.length));
    const logged = sandbox.requests.filter((r) => r.listener === 'storage' && r.status === 200).at(-1)!;
    expect(logged.x_api_key).toBe(false);
  });

  it('serves the MP4, the HLS playlist and its signed segments', async () => {
    const video = (await detailOfKind(sandbox, 'video')).transcript.find((row) => row.video)!.video!;
    const mp4 = await fetchBytes(video.mp4_url);
    expect(mp4.status).toBe(200);
    expect(mp4.type).toBe('video/mp4');
    expect(mp4Problems(mp4.bytes, tagOf(video.mp4_url), fixture('clip.mp4'))).toEqual([]);
    expect(mp4.bytes.subarray(4, 8).toString('latin1')).toBe('ftyp');

    const playlist = await fetchBytes(video.stream_url);
    expect(playlist.status).toBe(200);
    expect(playlist.type).toBe('application/vnd.apple.mpegurl');
    const text = playlist.bytes.toString('utf8');
    expect(text.startsWith('#EXTM3U\n')).toBe(true);
    expect(text).toContain('#EXT-X-ENDLIST');
    const uris = text.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
    expect(uris).toHaveLength(2);
    for (const [n, uri] of uris.entries()) {
      expect(uri).toMatch(/^seg\d+\.ts\?expires=\d+&sig=[0-9a-f]{64}$/);
      const segmentUrl = new URL(uri, video.stream_url).toString();
      const segment = await fetchBytes(segmentUrl);
      expect(segment.status).toBe(200);
      expect(segment.type).toBe('video/mp2t');
      expect(tsProblems(segment.bytes, tagOf(segmentUrl), fixture(`seg${n}.ts`))).toEqual([]);
      expect(segment.bytes[0]).toBe(0x47);
    }
    // A segment URI without its own signature is refused.
    const unsigned = new URL(uris[0]!.split('?')[0]!, video.stream_url).toString();
    expect((await fetchBytes(unsigned)).status).toBe(403);
  });

  it('answers HEAD with the headers only', async () => {
    const url = (await detailOfKind(sandbox, 'audio')).transcript.find((row) => row.audio)!.audio!;
    const head = await fetchBytes(url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    const got = await fetchBytes(url);
    expect(head.response.headers.get('content-length')).toBe(String(got.bytes.length));
    expect(head.bytes.length).toBe(0);
  });
});

describe('signatures', () => {
  it('refuses tampered signatures, expiries and paths with 403', async () => {
    const audio = (await detailOfKind(sandbox, 'audio')).transcript.find((row) => row.audio)!.audio!;
    const video = (await detailOfKind(sandbox, 'video')).transcript.find((row) => row.video)!.video!;
    const flip = (hex: string) => (hex[0] === 'a' ? 'b' : 'a') + hex.slice(1);
    const variants = [
      tamper(audio, (u) => u.searchParams.set('sig', flip(u.searchParams.get('sig')!))),
      tamper(audio, (u) =>
        u.searchParams.set('expires', String(Number(u.searchParams.get('expires')) + 3600)),
      ),
      tamper(audio, (u) => u.searchParams.delete('sig')),
      tamper(audio, (u) => {
        u.search = '';
      }),
      tamper(audio, (u) => {
        u.pathname = u.pathname.replace(/\/(\d+)\.mp3$/, '/99.mp3');
      }),
      tamper(video.mp4_url, (u) => u.searchParams.set('sig', flip(u.searchParams.get('sig')!))),
      tamper(video.stream_url, (u) => u.searchParams.set('sig', '00')),
    ];
    for (const url of variants) {
      const got = await fetchBytes(url);
      expect(got.status, url).toBe(403);
      expect(got.type).not.toMatch(/^(audio|video)\//);
    }
  });

  it('refuses a URL once the clock has moved past its hour, and accepts a fresh one', async () => {
    const own = await startSandbox({ seed: 7, startTime: Date.parse('2030-01-01T00:00:00Z') });
    try {
      const audio = (await detailOfKind(own, 'audio')).transcript.find((row) => row.audio)!.audio!;
      const expires = Number(new URL(audio).searchParams.get('expires'));
      expect(expires * 1000 - own.clock.now()).toBeGreaterThan(59 * 60_000);
      expect(expires * 1000 - own.clock.now()).toBeLessThanOrEqual(60 * 60_000);
      own.clock.advance(59 * 60_000);
      expect((await fetchBytes(audio)).status).toBe(200);
      own.clock.advance(2 * 60_000);
      expect((await fetchBytes(audio)).status).toBe(403);

      const fresh = (await detailOfKind(own, 'audio')).transcript.find((row) => row.audio)!.audio!;
      expect((await fetchBytes(fresh)).status).toBe(200);
      own.clock.set(Date.parse('2030-01-01T00:00:00Z'));
      expect((await fetchBytes(audio)).status).toBe(200);
    } finally {
      await own.close();
    }
  });

  it('expires video links and playlist segments too', async () => {
    const own = await startSandbox({ seed: 7 });
    try {
      const video = (await detailOfKind(own, 'video')).transcript.find((row) => row.video)!.video!;
      const playlist = await (await fetch(video.stream_url)).text();
      const segment = new URL(
        playlist.split('\n').find((line) => line.startsWith('seg'))!,
        video.stream_url,
      ).toString();
      own.clock.advance(61 * 60_000);
      for (const url of [video.mp4_url, video.stream_url, segment])
        expect((await fetchBytes(url)).status).toBe(403);
    } finally {
      await own.close();
    }
  });

  it('signs with a secret of its own: another sandbox refuses the URL', async () => {
    const other = await startSandbox({ seed: 7 });
    try {
      const audio = (await detailOfKind(sandbox, 'audio')).transcript.find((row) => row.audio)!.audio!;
      const moved = audio.replace(sandbox.storage_url, other.storage_url);
      expect((await fetchBytes(moved)).status).toBe(403);
    } finally {
      await other.close();
    }
  });
});

describe('mediaScale', () => {
  it('serves larger bodies with a correct Content-Length that start like the fixture', async () => {
    const big = await startSandbox({ seed: 7, mediaScale: 10 });
    try {
      const audio = (await detailOfKind(big, 'audio')).transcript.find((row) => row.audio)!.audio!;
      const mp3 = await fetchBytes(audio);
      const tone = fixture('tone.mp3');
      expect(
        mp3Problems(mp3.bytes, tagOf(audio), Buffer.concat(Array.from({ length: 10 }, () => tone))),
      ).toEqual([]);
      expect(mp3.response.headers.get('content-length')).toBe(String(mp3.bytes.length));

      const video = (await detailOfKind(big, 'video')).transcript.find((row) => row.video)!.video!;
      const mp4 = await fetchBytes(video.mp4_url);
      const clip = fixture('clip.mp4');
      expect(mp4.bytes.length).toBeGreaterThanOrEqual(clip.length * 9);
      // The padding is a well-formed `free` box after the clip, then the tag's.
      expect(mp4Problems(mp4.bytes, tagOf(video.mp4_url), clip)).toEqual([]);
      expect(mp4.bytes.subarray(clip.length + 4, clip.length + 8).toString('latin1')).toBe('free');

      const playlist = await (await fetch(video.stream_url)).text();
      const segmentUrl = new URL(playlist.split('\n').find((l) => l.startsWith('seg'))!, video.stream_url);
      const segment = await fetchBytes(segmentUrl.toString());
      expect(segment.bytes.length % 188).toBe(0);
      expect(tsProblems(segment.bytes, tagOf(segmentUrl.toString()), fixture('seg0.ts'))).toEqual([]);
      expect(segment.bytes.length).toBeGreaterThan(fixture('seg0.ts').length * 9);
      expect(segment.response.headers.get('content-length')).toBe(String(segment.bytes.length));
    } finally {
      await big.close();
    }
  });
});

describe('text', () => {
  it('lists responses whose ids the detail call accepts', async () => {
    const linkId = studyOf(sandbox, 'text');
    const items = (await api<Item[]>(sandbox, `responses/${linkId}?per_page=3`)).body;
    for (const item of items) {
      const detail = await api<Detail>(sandbox, `responses/${linkId}/${item.id}`);
      expect(detail.body.id).toBe(item.id);
      expect(detail.body.survey).toBe(linkId);
    }
  });
});
