import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import yauzl from 'yauzl';
import type { MediaBody } from '../../../src/media/types.ts';
import { openMediaArchive } from '../../../src/output/codecs/zip-writer.ts';
import { localFile } from '../../helpers/storage.ts';
import { readZip, unzipTest as unzipReport, zipFactsByPython, zipFactsByYauzl } from '../../helpers/zip.ts';

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

  it('writes zip64 sizes, offsets and end records that unzip, Python zipfile and yauzl read value by value', async () => {
    const zipPath = join(dir, 'media.zip');
    const archive = await openMediaArchive(...localFile(zipPath), { forceZip64: true });
    const bodies: [string, Buffer][] = [
      ['r/1-audio.mp3', randomBytes(70_000)],
      ['r/2-video.mp4', randomBytes(1_200_000)],
      ['r/3-audio.mp3', randomBytes(5)],
    ];
    await archive.add(bodies[0]![0], { kind: 'memory', data: bodies[0]![1] });
    await archive.add(bodies[1]![0], await tempFile('z.part', bodies[1]![1]));
    await archive.add(bodies[2]![0], { kind: 'memory', data: bodies[2]![1] });
    const summary = await archive.finish();
    const zip = await readFile(zipPath);
    expect(zip.length).toBe(summary.bytes);

    // Where each local header is, and what it says, read from the bytes: the zip64 extra
    // field holds both sizes, the 32-bit fields say "see zip64".
    const offsets: number[] = [];
    let at = 0;
    for (const [name, data] of bodies) {
      offsets.push(at);
      expect(zip.readUInt32LE(at)).toBe(0x04034b50);
      expect(zip.readUInt16LE(at + 4)).toBe(45);
      const descriptor = (zip.readUInt16LE(at + 6) & 0x0008) !== 0;
      expect([zip.readUInt32LE(at + 18), zip.readUInt32LE(at + 22)]).toEqual([0xffffffff, 0xffffffff]);
      const nameLength = zip.readUInt16LE(at + 26);
      expect(zip.subarray(at + 30, at + 30 + nameLength).toString()).toBe(name);
      const extra = at + 30 + nameLength;
      expect(zip.readUInt16LE(at + 28)).toBe(20);
      expect([zip.readUInt16LE(extra), zip.readUInt16LE(extra + 2)]).toEqual([1, 16]);
      expect([zip.readBigUInt64LE(extra + 4), zip.readBigUInt64LE(extra + 12)]).toEqual([
        BigInt(data.length),
        BigInt(data.length),
      ]);
      at = extra + 20 + data.length;
      if (descriptor) {
        // The data descriptor of a zip64 entry: signature, CRC-32, two 8-byte sizes.
        expect(zip.readUInt32LE(at)).toBe(0x08074b50);
        expect(zip.readUInt32LE(at + 4)).toBe(referenceCrc32(data));
        expect(zip.readBigUInt64LE(at + 8)).toBe(BigInt(data.length));
        expect(zip.readBigUInt64LE(at + 16)).toBe(BigInt(data.length));
        at += 24;
      }
    }
    // The zip64 end record, its locator, then the classic end record at its maximums.
    const end = zip.length - 22;
    expect(zip.readUInt32LE(end)).toBe(0x06054b50);
    expect(zip.readUInt32LE(end - 20)).toBe(0x07064b50);
    expect(zip.readUInt32LE(end - 76)).toBe(0x06064b50);
    expect(zip.readBigUInt64LE(end - 76 + 32)).toBe(3n);

    const expected = bodies.map(([name, data], i) => ({
      name,
      size: data.length,
      compressedSize: data.length,
      crc32: referenceCrc32(data),
      offset: offsets[i],
      extraIds: [1],
      sha256: sha256(data),
    }));
    expect(await zipFactsByYauzl(zipPath)).toEqual(expected);
    expect(zipFactsByPython(zipPath)).toEqual(expected);
    const report = unzipReport(zipPath);
    for (const [name] of bodies) expect(report).toContain(`testing: ${name}`);
    expect(report).toContain('No errors detected in compressed data');
  });

  it('writes no zip64 field where nothing needs one', async () => {
    const zipPath = join(dir, 'media.zip');
    const archive = await openMediaArchive(...localFile(zipPath));
    const data = randomBytes(3_000);
    await archive.add('r/1-audio.mp3', await tempFile('y.part', data));
    await archive.finish();
    const zip = await readFile(zipPath);
    expect(zip.readUInt16LE(4)).toBe(20);
    expect(zip.readUInt16LE(28)).toBe(0);
    expect(zip.includes(Buffer.from([0x50, 0x4b, 0x06, 0x06]))).toBe(false);
    const facts = await zipFactsByYauzl(zipPath);
    expect(facts.map((f) => [f.size, f.extraIds, f.sha256])).toEqual([[3_000, [], sha256(data)]]);
    expect(zipFactsByPython(zipPath)).toEqual(facts);
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

  it('streams an entry of stated size chunk by chunk, and removes the zip when the stream is shorter', async () => {
    const zipPath = join(dir, 'media.zip');
    const archive = await openMediaArchive(...localFile(zipPath));
    const chunks = [Buffer.alloc(70_000, 1), Buffer.from('middle'), Buffer.alloc(5, 2)];
    const whole = Buffer.concat(chunks);
    await archive.add('s/r/1-video.ts', { kind: 'stream', size: whole.length, open: async () => chunks });
    await archive.finish();
    const entries = await readZip(zipPath);
    expect(entries.map((e) => [e.name, e.sha256])).toEqual([['s/r/1-video.ts', sha256(whole)]]);
    unzipTest(zipPath);

    const shortPath = join(dir, 'short.zip');
    const short = await openMediaArchive(...localFile(shortPath));
    await expect(
      short.add('s/r/1-video.ts', { kind: 'stream', size: whole.length + 1, open: async () => chunks }),
    ).rejects.toThrow(/shorter than its 70012 bytes/);
    expect(readdirSync(dir).filter((name) => name.includes('short.zip'))).toEqual([]);
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

  it('gives every entry the time it is given, so the same files make the same zip', async () => {
    const time = new Date('2031-07-04T23:59:58Z');
    const write = async (name: string) => {
      const zipPath = join(dir, name);
      const archive = await openMediaArchive(...localFile(zipPath), { time });
      await archive.add('bag/data/é.txt', { kind: 'memory', data: Buffer.from('one') });
      await archive.add('bag/data/two', { kind: 'stream', size: 3, open: async () => [Buffer.from('two')] });
      await archive.finish();
      return zipPath;
    };
    const first = await write('first.zip');
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const second = await write('second.zip');
    expect(sha256(await readFile(second))).toBe(sha256(await readFile(first)));
    // Python's zipfile reads the zone-less DOS fields: the UTC time written.
    const stamps = execFileSync(
      'python3',
      [
        '-c',
        'import sys,zipfile;[print(i.date_time) for i in zipfile.ZipFile(sys.argv[1]).infolist()]',
        first,
      ],
      { encoding: 'utf8' },
    );
    expect(stamps.trim().split('\n')).toEqual(['(2031, 7, 4, 23, 59, 58)', '(2031, 7, 4, 23, 59, 58)']);
    unzipTest(first);
  });

  it('fails to open where the zip cannot be written', async () => {
    await expect(openMediaArchive(...localFile(join(dir, 'no', 'such', 'media.zip')))).rejects.toThrow();
  });
});
