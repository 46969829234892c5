/**
 * Files written to s3rver through the S3 storage: parts are filled in the scratch folder and
 * sent from there. Bytes round-trip exactly whatever the file's size against a part; nothing
 * is visible before close; a stopped or failed upload leaves no object and no part file.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openS3Storage } from '../../src/storage/s3.ts';
import { MAX_PARTS, PART_BYTES, partBytes } from '../../src/storage/s3-output.ts';
import type { OutputFile, Storage } from '../../src/storage/types.ts';
import { S3_CREDENTIALS, type S3Server, startS3 } from '../helpers/s3.ts';

let s3: S3Server;
let storage: Storage;
let scratchParent: string;
const savedEnv = { ...process.env };

beforeAll(async () => {
  s3 = await startS3(['files']);
  Object.assign(process.env, S3_CREDENTIALS);
  storage = await openS3Storage('s3://files/out', { endpoint: s3.endpoint });
});

afterAll(async () => {
  await s3.close();
  process.env = savedEnv;
});

// The scratch folder is made in the OS temp directory: a fresh one per test shows what is left.
beforeEach(async () => {
  scratchParent = await mkdtemp(join(tmpdir(), 'parts-'));
  process.env.TMPDIR = scratchParent;
});

afterEach(async () => {
  process.env.TMPDIR = savedEnv.TMPDIR;
  if (savedEnv.TMPDIR === undefined) delete process.env.TMPDIR;
  await rm(scratchParent, { recursive: true, force: true });
});

/** Every file under the scratch parent (the scratch folder and the parts in it). */
async function scratchFiles(): Promise<string[]> {
  return (await readdir(scratchParent, { recursive: true })).map(String).sort();
}

/** Unfinished multipart uploads s3rver keeps for the bucket. */
async function unfinishedUploads(): Promise<string[]> {
  return readdir(join(s3.directory, 'files', '._S3rver_uploads')).catch(() => []);
}

/** Writes `content` in uneven chunks from one reused buffer (the writer must copy or finish with it). */
async function writeInChunks(file: OutputFile, content: Buffer, from: number, to: number): Promise<void> {
  const reused = Buffer.alloc(200_000);
  let at = from;
  for (let size = 1; at < to; size = (size * 7 + 13) % 199_999) {
    const length = Math.min(size + 1, to - at);
    content.copy(reused, 0, at, at + length);
    await file.write(reused.subarray(0, length));
    reused.fill(0xee, 0, length);
    at += length;
  }
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('S3 output files', () => {
  it('round-trip byte for byte: empty, smaller than a part, exactly a part, over two parts, written at once', async () => {
    const contents = {
      'empty.bin': Buffer.alloc(0),
      'small.bin': randomBytes(300_001),
      'one-part.bin': randomBytes(PART_BYTES),
      'large.bin': randomBytes(2 * PART_BYTES + 12_345),
    };
    const names = Object.keys(contents) as (keyof typeof contents)[];
    const files = await Promise.all(names.map((name) => storage.create(name)));
    // Interleaved, as a run writes its tables: half of each, then the rest.
    for (const [index, name] of names.entries()) {
      await writeInChunks(files[index]!, contents[name], 0, Math.floor(contents[name].length / 2));
    }
    expect(await scratchFiles()).not.toEqual([]);
    for (const [index, name] of names.entries()) {
      const content = contents[name];
      await writeInChunks(files[index]!, content, Math.floor(content.length / 2), content.length);
    }
    expect(await s3.keys('files', 'out/')).toEqual([]);

    const stored = await Promise.all(files.map((file) => file.close()));
    for (const [index, name] of names.entries()) {
      const back = await s3.get('files', `out/${name}`);
      expect(back.length, name).toBe(contents[name].length);
      expect(back.equals(contents[name]), name).toBe(true);
      expect(stored[index]).toEqual({ path: name, bytes: back.length, sha256: sha256(back) });
    }
    expect(await scratchFiles()).toEqual([]);
    expect(await unfinishedUploads()).toEqual([]);
  });

  it("sizes parts so that S3's 10,000 hold 310,000 MiB: 5 MiB for the first 2,000, doubling every 2,000, at most 80 MiB", () => {
    const MiB = 1024 * 1024;
    const sizes = Array.from({ length: MAX_PARTS }, (_, i) => partBytes(i + 1));
    expect(MAX_PARTS).toBe(10_000);
    expect(sizes.slice(0, 2000).every((size) => size === PART_BYTES)).toBe(true);
    expect([partBytes(2001), partBytes(4001), partBytes(6001), partBytes(8001)]).toEqual(
      [2, 4, 8, 16].map((n) => n * PART_BYTES),
    );
    expect(Math.max(...sizes)).toBe(80 * MiB);
    expect(sizes.reduce((a, b) => a + b, 0) / MiB).toBe(310_000);
    // Larger than the largest media.zip entry allowed (media.max_file_mib at most 65,536).
    expect(sizes.reduce((a, b) => a + b, 0) / MiB).toBeGreaterThan(4 * 65_536);
  });

  it('a file stopped after a part was sent leaves no object and no part file', async () => {
    const file = await storage.create('stopped.bin');
    await writeInChunks(file, randomBytes(PART_BYTES + 70_000), 0, PART_BYTES + 70_000);
    await file.abort();
    // s3rver does not implement AbortMultipartUpload, so its unfinished upload stays there.
    expect(await s3.keys('files', 'out/stopped')).toEqual([]);
    expect(await scratchFiles()).toEqual([]);
  });

  it('a failed upload names the object and leaves no part file', async () => {
    const missing = await openS3Storage('s3://no-such-bucket/out', { endpoint: s3.endpoint });
    const large = await missing.create('large.bin');
    const small = await missing.create('small.bin');
    const content = randomBytes(2 * PART_BYTES + 1);
    const failure = await (async () => {
      await small.write('a few bytes');
      await writeInChunks(large, content, 0, content.length);
      return large.close();
    })().catch((error: unknown) => error as Error);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toContain('s3://no-such-bucket/out/large.bin');
    await expect(small.close()).rejects.toThrow(/no-such-bucket\/out\/small\.bin/);
    await large.abort();
    expect(await scratchFiles()).toEqual([]);
  });
});
