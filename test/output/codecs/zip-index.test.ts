/**
 * The viewer's index of media.zip: each entry's bytes, found from the central directory and
 * the local header, equal what unzip extracts, in classic and zip64 archives alike; and the
 * Range header is read the way RFC 9110 says.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openMediaArchive } from '../../../src/output/codecs/zip-writer.ts';
import { ZipIndex } from '../../../src/reader/index.ts';
import { LocalStorage } from '../../../src/storage/local.ts';
import { parseRange } from '../../../src/view/server.ts';
import { extractEntry } from '../../helpers/browser.ts';
import { localFile } from '../../helpers/storage.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'view-zip-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function streamed(index: ZipIndex, name: string, start: number, end: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await index.read(index.entries.get(name)!, start, end))
    chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('ZipIndex', () => {
  for (const forceZip64 of [false, true]) {
    it(`reads every entry as unzip does${forceZip64 ? ' in a zip64 archive' : ''}`, async () => {
      const zipPath = join(dir, 'media.zip');
      const archive = await openMediaArchive(...localFile(zipPath), { forceZip64 });
      const bodies: [string, Buffer][] = [
        ['a/r1/1-audio.mp3', randomBytes(70_000)],
        ['a/r1/2-video.mp4', randomBytes(300_000)],
        ['a/r1/3-hls/index.m3u8', Buffer.from('#EXTM3U\n00001.ts\n')],
        ['ä/r2/1-audio.mp3', randomBytes(5)],
      ];
      for (const [name, data] of bodies) await archive.add(name, { kind: 'memory', data });
      await archive.finish();
      const index = await ZipIndex.open(new LocalStorage(dir), 'media.zip', (await stat(zipPath)).size);
      expect([...index.entries.keys()].sort()).toEqual(bodies.map(([name]) => name).sort());
      for (const [name, data] of bodies) {
        const entry = index.entries.get(name)!;
        expect(entry.method).toBe(0);
        expect(entry.size).toBe(data.length);
        const extracted = await extractEntry(zipPath, name);
        expect(extracted.equals(data)).toBe(true);
        expect((await streamed(index, name, 0, data.length)).equals(extracted)).toBe(true);
        const middle = Math.floor(data.length / 3);
        expect(
          (await streamed(index, name, middle, data.length - 1)).equals(extracted.subarray(middle, -1)),
        ).toBe(true);
        expect((await index.readAll(entry)).equals(data)).toBe(true);
      }
    });
  }

  it('refuses a file that is no zip', async () => {
    const storage = new LocalStorage(dir);
    await storage.put('media.zip', 'not a zip at all');
    await expect(ZipIndex.open(storage, 'media.zip', 16)).rejects.toThrow(/not a zip file/);
  });
});

describe('parseRange', () => {
  it('reads one range, suffix and open ranges, and refuses what lies beyond the entry', () => {
    expect(parseRange(undefined, 100)).toBeNull();
    expect(parseRange('bytes=0-', 100)).toEqual({ start: 0, end: 99 });
    expect(parseRange('bytes=10-19', 100)).toEqual({ start: 10, end: 19 });
    expect(parseRange('bytes=90-200', 100)).toEqual({ start: 90, end: 99 });
    expect(parseRange('bytes=-30', 100)).toEqual({ start: 70, end: 99 });
    expect(parseRange('bytes=-300', 100)).toEqual({ start: 0, end: 99 });
    expect(parseRange('bytes=100-', 100)).toBe('unsatisfiable');
    expect(parseRange('bytes=20-10', 100)).toBe('unsatisfiable');
    expect(parseRange('bytes=-0', 100)).toBe('unsatisfiable');
    expect(parseRange('items=0-1', 100)).toBe('unsatisfiable');
    // Several ranges: served whole (a server may ignore Range).
    expect(parseRange('bytes=0-1,5-6', 100)).toBeNull();
  });
});
