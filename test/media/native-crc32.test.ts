/** The CRC-32 that archiver now computes through zlib: checked against a bitwise reference. */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import crc32 from 'crc-32';
import { describe, expect, it } from 'vitest';
import yauzl from 'yauzl';
import { openMediaArchive } from '../../src/media/archive.ts';

/** The textbook bit-at-a-time CRC-32 (polynomial 0xEDB88320), unsigned. */
function referenceCrc32(data: Uint8Array, seed = 0): number {
  let crc = (seed ^ 0xffffffff) >>> 0;
  for (const byte of data) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return (crc ^ 0xffffffff) >>> 0;
}

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

describe('native CRC-32 for archiver', () => {
  it('gives the reference checksum, signed as crc-32 did, also when chained through a seed', async () => {
    await import('../../src/media/native-crc32.ts');
    for (const size of [0, 1, 7, 4096, 100_003]) {
      const data = randomBytes(size);
      expect(crc32.buf(data) >>> 0).toBe(referenceCrc32(data));
      expect(crc32.buf(data)).toBe(referenceCrc32(data) | 0);
      const [head, tail] = [data.subarray(0, size >> 1), data.subarray(size >> 1)];
      expect(crc32.buf(tail, crc32.buf(head)) >>> 0).toBe(referenceCrc32(data));
      expect(crc32.buf([...data.subarray(0, 64)]) >>> 0).toBe(referenceCrc32(data.subarray(0, 64)));
    }
  });

  it('puts the reference checksum of each entry in media.zip', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'native-crc-'));
    try {
      const zipPath = join(dir, 'media.zip');
      const archive = await openMediaArchive(zipPath);
      const bodies = { 'a.mp3': randomBytes(300_000), 'b.mp4': randomBytes(5) };
      for (const [name, data] of Object.entries(bodies)) await archive.add(name, { kind: 'memory', data });
      await archive.finish();
      const crcs = await entryCrcs(zipPath);
      for (const [name, data] of Object.entries(bodies)) expect(crcs.get(name)).toBe(referenceCrc32(data));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
