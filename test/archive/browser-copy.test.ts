/**
 * The MP4 copy of an MPEG-TS recording, made from HLS segments that ffmpeg writes (H.264 with
 * B-frames and AAC, in segments of two seconds), fed in chunks that cut across TS packets:
 * ffprobe reads it as long as the joined segments, each track starting where it did, and
 * ffmpeg decodes the very same pictures and sound from both. A codec the remuxer lacks gives
 * a reason, not a copy.
 */
import { execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserCopy } from '../../src/archive/browser-copy.ts';
import { ffprobeFileDuration } from '../helpers/browser.ts';

const run = promisify(execFile);

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'browser-copy-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** An HLS stream of `seconds` from ffmpeg's test sources, its segments in order. */
async function hlsSegments(name: string, seconds: number, audio: string[], video = ['-c:v', 'libx264']) {
  const folder = join(dir, name);
  await mkdir(folder, { recursive: true });
  await run(
    'ffmpeg',
    [
      ...['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=25'],
      ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100', '-t', String(seconds)],
      ...[...video, '-bf', '2', '-g', '25', ...audio],
      ...['-f', 'hls', '-hls_time', '2', '-hls_playlist_type', 'vod'],
      ...['-hls_segment_filename', join(folder, 'seg%d.ts'), join(folder, 'index.m3u8')],
    ],
    { cwd: folder },
  );
  const names = (await readdir(folder)).filter((n) => n.endsWith('.ts'));
  names.sort((a, b) => Number(a.replace(/\D/g, '')) - Number(b.replace(/\D/g, '')));
  return Promise.all(names.map((n) => readFile(join(folder, n))));
}

/** The segments through a BrowserCopy in 1000-byte chunks; the copy written out, or its reason. */
async function copyOf(name: string, segments: readonly Buffer[]): Promise<string> {
  const copy = new BrowserCopy(join(dir, `${name}.scratch`));
  for (const segment of segments) {
    for (let at = 0; at < segment.length; at += 1000) copy.push(segment.subarray(at, at + 1000));
    await copy.endSegment();
  }
  const made = await copy.finish();
  if ('reason' in made) return made.reason;
  const path = join(dir, `${name}.mp4`);
  const out = createWriteStream(path);
  for await (const chunk of await made.file.open()) out.write(chunk);
  await new Promise((resolve) => out.end(resolve));
  await made.remove();
  expect((await stat(path)).size).toBe(made.file.size);
  return path;
}

async function ffprobeStreams(path: string): Promise<{ codec_name: string; start_time: string }[]> {
  const { stdout } = await run('ffprobe', ['-v', 'error', '-show_streams', '-of', 'json', path]);
  return JSON.parse(stdout).streams;
}

const decodedMd5 = async (path: string, stream: 'a' | 'v') =>
  (await run('ffmpeg', ['-v', 'error', '-i', path, '-map', `0:${stream}`, '-f', 'md5', '-'])).stdout.trim();

describe('an MP4 copy of MPEG-TS segments', () => {
  it('lasts as long as the joined segments and decodes to the same pictures and sound', async () => {
    const segments = await hlsSegments('av', 6.3, ['-c:a', 'aac']);
    expect(segments.length).toBeGreaterThan(2);
    const joined = join(dir, 'av.ts');
    await run('sh', [
      '-c',
      `cat "$@" > ${joined}`,
      'sh',
      ...segments.map((_, i) => join(dir, 'av', `seg${i}.ts`)),
    ]);
    const copy = await copyOf('av', segments);
    expect(copy).toMatch(/\.mp4$/);
    expect(Math.abs((await ffprobeFileDuration(copy)) - (await ffprobeFileDuration(joined)))).toBeLessThan(
      0.01,
    );
    const start = (streams: { codec_name: string; start_time: string }[], codec: string) =>
      Number(streams.find((s) => s.codec_name === codec)?.start_time);
    const [source, copied] = [await ffprobeStreams(joined), await ffprobeStreams(copy)];
    // The video starts after the audio by the same delay in both, so they stay in step.
    expect(
      Math.abs(start(copied, 'h264') - start(copied, 'aac') - (start(source, 'h264') - start(source, 'aac'))),
    ).toBeLessThan(0.002);
    expect(await decodedMd5(copy, 'v')).toBe(await decodedMd5(joined, 'v'));
    expect(await decodedMd5(copy, 'a')).toBe(await decodedMd5(joined, 'a'));
    // The same segments give the same bytes.
    expect(await readFile(await copyOf('av-again', segments))).toEqual(await readFile(copy));
  });

  it('names the codec it cannot remux and makes no copy', async () => {
    const reason = await copyOf('mp2', await hlsSegments('mp2', 2.5, ['-c:a', 'mp2']));
    expect(reason).toMatch(/^it holds MPEG-\d audio, which the remuxer does not take$/);
    const hevc = await copyOf('hevc', await hlsSegments('hevc', 2.5, ['-c:a', 'aac'], ['-c:v', 'libx265']));
    expect(hevc).toBe('it holds H.265, which the remuxer does not take');
  });
});
