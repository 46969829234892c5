import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import yauzl from 'yauzl';
import { openMediaArchive } from '../../src/media/archive.ts';
import type { MediaBody } from '../../src/media/types.ts';
import { localFile } from '../storage/helpers.ts';
import { readZip } from './zip.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'media-archive-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

async function tempFile(name: string, content: Buffer): Promise<MediaBody> {
  const path = join(dir, name);
  await writeFile(path, content);
  return { kind: 'file', path };
}

function unzipTest(zip: string): void {
  // `unzip -t` is a second independent check where the tool exists; yauzl always runs.
  if (!existsSync('/usr/bin/unzip')) return;
  const out = execFileSync('/usr/bin/unzip', ['-t', zip], { encoding: 'utf8' });
  expect(out).toContain('No errors detected');
}

/** The textbook bit-at-a-time CRC-32 (polynomial 0xEDB88320), unsigned. */
function referenceCrc32(data: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of data) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return (crc ^ 0xffffffff) >>> 0;
}

/** Each entry's CRC-32 as the central directory states it, read by yauzl. */
async function entryCrcs(zipPath: string): Promise<Map<string, number>> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(zipPath, { lazyEntries: true }, (error, file) =>
      error || !file ? reject(error) : resolve(file),
    ),
  );
  const crcs = new Map<string, number>();
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      crcs.set(entry.fileName, entry.crc32);
      zip.readEntry();
    });
    zip.on('end', resolve);
    zip.on('error', reject);
    zip.readEntry();
  });
  zip.close();
  return crcs;
}

describe('openMediaArchive', () => {
  it('writes stored entries, from files and from memory, that read back byte for byte', async () => {
    const zipPath = join(dir, 'media.zip');
    const archive = await openMediaArchive(...localFile(zipPath));
    const first = Buffer.alloc(300_000, 7);
    const second = Buffer.from('not really audio');
    await Promise.all([
      archive.add('s/r/1-audio.mp3', await tempFile('a.part', first)),
      archive.add('s/r/2-video.mp4', { kind: 'memory', data: second }),
    ]);
    const summary = await archive.finish();
    expect(summary.entries).toBe(2);
    const entries = await readZip(zipPath);
    expect(entries.map((e) => e.name)).toEqual(['s/r/1-audio.mp3', 's/r/2-video.mp4']);
    expect(entries.map((e) => e.compressionMethod)).toEqual([0, 0]);
    expect(entries.map((e) => e.sha256)).toEqual([sha256(first), sha256(second)]);
    unzipTest(zipPath);
  });

  it('states the reference CRC-32 of every entry, from memory and from files of several read chunks', async () => {
    const zipPath = join(dir, 'media.zip');
    const archive = await openMediaArchive(...localFile(zipPath));
    const bodies: [string, Buffer, 'memory' | 'file'][] = [
      ['a.mp3', randomBytes(300_000), 'memory'],
      ['b.mp4', randomBytes(5), 'memory'],
      ['c.mp4', randomBytes(2_500_001), 'file'],
      ['d.mp4', Buffer.alloc(0), 'file'],
      ['e.mp3', Buffer.alloc(0), 'memory'],
    ];
    for (const [name, data, kind] of bodies) {
      await archive.add(name, kind === 'memory' ? { kind, data } : await tempFile(`${name}.part`, data));
    }
    const summary = await archive.finish();
    expect(summary.entries).toBe(bodies.length);
    const crcs = await entryCrcs(zipPath);
    for (const [name, data] of bodies) expect(crcs.get(name)).toBe(referenceCrc32(data));
    const entries = await readZip(zipPath);
    expect(entries.map((e) => e.sha256)).toEqual(bodies.map(([, data]) => sha256(data)));
    unzipTest(zipPath);
  });

  it('writes zip64 end records and offsets that yauzl and unzip read', async () => {
    const zipPath = join(dir, 'media.zip');
    const archive = await openMediaArchive(...localFile(zipPath), { forceZip64: true });
    const first = randomBytes(70_000);
    const second = randomBytes(1_200_000);
    await archive.add('r/1-audio.mp3', { kind: 'memory', data: first });
    await archive.add('r/2-video.mp4', await tempFile('z.part', second));
    const summary = await archive.finish();
    const entries = await readZip(zipPath);
    expect(entries.map((e) => [e.name, e.sha256])).toEqual([
      ['r/1-audio.mp3', sha256(first)],
      ['r/2-video.mp4', sha256(second)],
    ]);
    expect((await stat(zipPath)).size).toBe(summary.bytes);
    unzipTest(zipPath);
  });

  it('keeps names outside ASCII as UTF-8', async () => {
    const zipPath = join(dir, 'media.zip');
    const archive = await openMediaArchive(...localFile(zipPath));
    await archive.add('étude/回答/1-audio.mp3', { kind: 'memory', data: Buffer.from('x') });
    await archive.finish();
    expect((await readZip(zipPath)).map((e) => e.name)).toEqual(['étude/回答/1-audio.mp3']);
    unzipTest(zipPath);
  });

  it('writes a valid empty zip when there is no media', async () => {
    const zipPath = join(dir, 'media.zip');
    const archive = await openMediaArchive(...localFile(zipPath));
    expect((await archive.finish()).entries).toBe(0);
    expect(await readZip(zipPath)).toEqual([]);
  });

  it('rejects an add whose file is missing and keeps going', async () => {
    const zipPath = join(dir, 'media.zip');
    const archive = await openMediaArchive(...localFile(zipPath));
    await expect(
      archive.add('s/r/1-audio.mp3', { kind: 'file', path: join(dir, 'missing.part') }),
    ).rejects.toThrow();
    await archive.add('s/r/2-audio.mp3', await tempFile('c.part', Buffer.from('ok')));
    await archive.finish();
    expect((await readZip(zipPath)).map((e) => e.name)).toEqual(['s/r/2-audio.mp3']);
  });

  it('abort removes the partial zip and refuses further entries', async () => {
    const zipPath = join(dir, 'media.zip');
    const archive = await openMediaArchive(...localFile(zipPath));
    await archive.add('s/r/1-audio.mp3', await tempFile('d.part', Buffer.alloc(100_000, 1)));
    // Until finished, the zip is written under a hidden name (renamed into place on close).
    const zips = () => readdirSync(dir).filter((name) => name.includes('media.zip'));
    expect(zips()).toEqual([expect.stringMatching(/^\..*media\.zip\.writing$/)]);
    expect(existsSync(zipPath)).toBe(false);
    await archive.abort();
    expect(zips()).toEqual([]);
    await expect(archive.add('s/r/2-audio.mp3', await tempFile('e.part', Buffer.from('x')))).rejects.toThrow(
      /aborted/,
    );
    await expect(archive.finish()).rejects.toThrow(/aborted/);
  });

  it('abort during an entry rejects that add and removes the zip', async () => {
    const zipPath = join(dir, 'media.zip');
    const archive = await openMediaArchive(...localFile(zipPath));
    const adding = archive.add('s/r/1-video.mp4', await tempFile('f.part', Buffer.alloc(20_000_000, 3)));
    await new Promise((resolve) => setImmediate(resolve));
    await archive.abort();
    await expect(adding).rejects.toThrow(/aborted/);
    expect(existsSync(zipPath)).toBe(false);
  });

  it('fails to open where the zip cannot be written', async () => {
    await expect(openMediaArchive(...localFile(join(dir, 'no', 'such', 'media.zip')))).rejects.toThrow();
  });
});
