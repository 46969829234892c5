/**
 * A recording of more than 4 GiB, within media.max_file_mib, goes into media.zip as a zip64
 * entry: a run against the sandbox whose one transcript row points at a loopback media host
 * streaming 4 GiB + 5 MiB + 123 bytes (a 1 MiB random block over and over, so a lost,
 * doubled or misplaced chunk changes the SHA-256). The committed run is read back by
 * `verify`, unzip -t, Python's zipfile and yauzl, value by value, and the next run fetches
 * nothing again. A recording announced larger than media.max_file_mib is refused on its
 * response headers: the host gets to send almost nothing of it.
 *
 * The big case writes the body to a temporary file and then media.zip (about 8.2 GB of disk
 * at its peak, both removed at the end) and reads it back several times: this file is slow
 * (about six minutes on a busy two-core machine) and kept apart from the fast media tests.
 * A third case puts an entry after one of more than 4 GiB (zip64 offsets) without using the
 * disk: the big body and the zip are sparse files of zeros. A fourth writes 65,540 entries
 * (zip64 end records for the entry count alone).
 */
import { createHash, randomBytes } from 'node:crypto';
import { open, readFile, stat, statfs, truncate } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import { openMediaArchive, ZipWriter } from '../../src/output/codecs/zip-writer.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readHyparquet } from '../helpers/readers.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';
import type { Detail } from '../helpers/sandbox.ts';
import { localFile } from '../helpers/storage.ts';
import { unzipTest, zipFactsByPython, zipFactsByYauzl } from '../helpers/zip.ts';

const MiB = 1024 * 1024;
const BIG = 2 ** 32 + 5 * MiB + 123;
const block = randomBytes(MiB);

/** The bytes of a body of `size`: `block` over and over, cut at `size`. */
function* pattern(size: number): Generator<Buffer> {
  for (let sent = 0; sent < size; sent += block.length)
    yield block.subarray(0, Math.min(block.length, size - sent));
}

/** A media host streaming `size` bytes of the pattern with their Content-Length; counts what it sent. */
class BigMediaHost {
  requests = 0;
  /** Bytes the socket took, over every request. */
  written = 0;
  private server: Server | null = null;

  constructor(private readonly size: number) {}

  async start(): Promise<string> {
    this.server = createServer((_request, response) => {
      this.requests++;
      response.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': String(this.size) });
      let closed = false;
      response.on('close', () => {
        closed = true;
      });
      void (async () => {
        for (const chunk of pattern(this.size)) {
          if (closed) return;
          const more = response.write(chunk);
          this.written += chunk.length;
          if (!more) {
            await new Promise<void>((resolve) => {
              const done = () => {
                response.off('drain', done).off('close', done);
                resolve();
              };
              response.on('drain', done).on('close', done);
            });
          }
        }
        response.end();
      })();
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/recording.mp3`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 29, studies: 3, responses: 2 });
});
afterAll(async () => {
  await sandbox.close();
});

/** Points the first recorded row of the audio study's first response at `url`. */
async function pointFirstRecordingAt(url: string): Promise<{ linkId: string; responseId: string }> {
  for (const candidate of sandbox.studies()) {
    const responseId = sandbox.responses(candidate.link_id)[0]!.id;
    const detailUrl = `${sandbox.base_url}/api/public/responses/${encodeURIComponent(candidate.link_id)}/${encodeURIComponent(responseId)}`;
    const detail = (await (
      await fetch(detailUrl, { headers: { 'x-api-key': sandbox.api_key } })
    ).json()) as Detail;
    const turn = detail.transcript.findIndex((row) => row.audio !== null);
    if (turn < 0) continue;
    sandbox.mutateDetail(candidate.link_id, responseId, (served) => {
      const transcript = (served.transcript as Record<string, unknown>[]).map((row, i) =>
        i === turn ? { ...row, audio: url } : row,
      );
      return { ...served, transcript };
    });
    return { linkId: candidate.link_id, responseId };
  }
  throw new Error('no study of the sandbox has a recorded audio row');
}

describe('a recording of more than 4 GiB', () => {
  it('is archived as a zip64 entry that verify, unzip, Python zipfile and yauzl read back, and is not fetched again', async () => {
    const free = await statfs(tmpdir());
    expect(
      free.bavail * free.bsize,
      'free disk in the temporary folder (the test needs about 8.2 GB)',
    ).toBeGreaterThan(12 * 1024 ** 3);
    const host = new BigMediaHost(BIG);
    const url = await host.start();
    try {
      const { responseId } = await pointFirstRecordingAt(url);
      const hash = createHash('sha256');
      let crc = 0;
      for (const chunk of pattern(BIG)) {
        hash.update(chunk);
        crc = crc32(chunk, crc);
      }
      const sha256 = hash.digest('hex');
      await withTempDir(async (out) => {
        const config = sandboxConfig(sandbox, out, { media: { enabled: true, max_file_mib: 4200 } });
        const result = await runAgainst(sandbox, config);
        expect(result.status).toBe('complete');
        expect(result.mediaFailed).toBe(0);
        expect(host.requests).toBe(1);
        const runDir = result.runDir!;

        const media = await readHyparquet(join(runDir, 'media.parquet'));
        const big = media.filter((row) => row.response_id === responseId && Number(row.bytes) === BIG);
        expect(big).toHaveLength(1);
        expect(big[0]).toMatchObject({ status: 'archived', sha256, error: null });
        const entry = String(big[0]!.file);
        const archived = media.filter((row) => row.status === 'archived');
        expect(archived.length).toBeGreaterThan(1);

        const verified = await verifyRun(runDir);
        expect(verified.problems).toEqual([]);
        expect(verified.checked.zipEntries).toBe(archived.length);

        const zipPath = join(runDir, 'media.zip');
        const byYauzl = await zipFactsByYauzl(zipPath);
        const byPython = zipFactsByPython(zipPath);
        expect(byPython).toEqual(byYauzl);
        const facts = byYauzl.find((f) => f.name === entry)!;
        expect(facts).toMatchObject({ size: BIG, compressedSize: BIG, crc32: crc, sha256, extraIds: [1] });
        // Every other entry is as the media table says, and small entries keep plain headers.
        for (const row of archived) {
          const read = byYauzl.find((f) => f.name === row.file)!;
          expect([read.size, read.sha256]).toEqual([Number(row.bytes), row.sha256]);
        }
        expect(
          byYauzl.filter((f) => f.size < 2 ** 32 && f.offset < 2 ** 32 && f.extraIds.length > 0),
        ).toEqual([]);
        const report = unzipTest(zipPath);
        expect(report).toContain(`testing: ${entry}`);
        expect(report).toContain('No errors detected in compressed data');

        // Nothing new on the service: the next run fetches nothing, the recording included.
        const again = await runAgainst(sandbox, config);
        expect(again.status).toBe('unchanged');
        expect(host.requests).toBe(1);
      });
    } finally {
      await host.close();
    }
  }, 900_000);

  it('announced larger than media.max_file_mib, is refused on its headers, not downloaded', async () => {
    const host = new BigMediaHost(BIG);
    const url = await host.start();
    try {
      const { responseId } = await pointFirstRecordingAt(url);
      await withTempDir(async (out) => {
        const config = sandboxConfig(sandbox, out, { media: { enabled: true, max_file_mib: 4096 } });
        const result = await runAgainst(sandbox, config);
        expect(result.status).toBe('partial');
        expect(result.mediaFailed).toBe(1);
        expect(host.requests).toBe(1);
        // What the socket took before the client closed it: buffers, not the file.
        expect(host.written).toBeLessThan(64 * MiB);
        const media = await readHyparquet(join(result.runDir!, 'media.parquet'));
        const failed = media.filter((row) => row.status === 'failed');
        expect(failed).toHaveLength(1);
        expect(failed[0]).toMatchObject({ response_id: responseId, file: null, bytes: null });
        expect(String(failed[0]!.error)).toMatch(
          new RegExp(
            `announced ${BIG} bytes \\(Content-Length\\), more than media\\.max_file_mib \\(4096 MiB\\); not downloaded`,
          ),
        );
        expect((await verifyRun(result.runDir!)).problems).toEqual([]);
      });
    } finally {
      await host.close();
    }
  });
});

/** media.zip's bytes into a sparse file: runs of zeros are skipped over, not written. */
async function sparseZipOutput(path: string) {
  const file = await open(path, 'w');
  const zeros = Buffer.alloc(MiB);
  let position = 0;
  return {
    async write(chunk: Uint8Array) {
      const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      const allZero = bytes.length <= zeros.length && zeros.subarray(0, bytes.length).equals(bytes);
      if (!allZero) await file.write(bytes, 0, bytes.length, position);
      position += bytes.length;
    },
    async close() {
      await file.truncate(position);
      await file.close();
    },
    async abort() {
      await file.close();
    },
  };
}

describe('an entry after one of more than 4 GiB', () => {
  it('has its offset in a zip64 field that unzip, Python zipfile and yauzl read, with no 4 GiB on disk', async () => {
    await withTempDir(async (dir) => {
      const bigPath = join(dir, 'big.part');
      const bigSize = 2 ** 32 + 17;
      await (await open(bigPath, 'w')).close();
      await truncate(bigPath, bigSize);
      const zipPath = join(dir, 'media.zip');
      const writer = new ZipWriter(zipPath, await sparseZipOutput(zipPath));
      const first = randomBytes(1000);
      const last = randomBytes(3000);
      await writer.add('s/r/1-audio.mp3', { kind: 'memory', data: first });
      await writer.add('s/r/2-video.mp4', { kind: 'file', path: bigPath });
      await writer.add('s/r/3-audio.mp3', { kind: 'memory', data: last });
      const summary = await writer.finish();
      expect(summary.bytes).toBeGreaterThan(bigSize);
      // The zip on disk holds little more than its headers and the two small bodies.
      for (const path of [zipPath, bigPath]) expect((await stat(path)).blocks * 512).toBeLessThan(MiB);

      const zeros = Buffer.alloc(MiB);
      const bigHash = createHash('sha256');
      let bigCrc = 0;
      for (let done = 0; done < bigSize; done += MiB) {
        const chunk = zeros.subarray(0, Math.min(MiB, bigSize - done));
        bigHash.update(chunk);
        bigCrc = crc32(chunk, bigCrc);
      }
      const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');
      const secondOffset = 30 + 15 + first.length;
      const thirdOffset = secondOffset + 30 + 15 + 20 + bigSize + 24;
      const expected = [
        {
          name: 's/r/1-audio.mp3',
          size: 1000,
          compressedSize: 1000,
          crc32: crc32(first),
          offset: 0,
          extraIds: [],
          sha256: sha(first),
        },
        {
          name: 's/r/2-video.mp4',
          size: bigSize,
          compressedSize: bigSize,
          crc32: bigCrc,
          offset: secondOffset,
          extraIds: [1],
          sha256: bigHash.digest('hex'),
        },
        {
          name: 's/r/3-audio.mp3',
          size: 3000,
          compressedSize: 3000,
          crc32: crc32(last),
          offset: thirdOffset,
          extraIds: [1],
          sha256: sha(last),
        },
      ];
      expect(await zipFactsByYauzl(zipPath)).toEqual(expected);
      expect(zipFactsByPython(zipPath)).toEqual(expected);
      const report = unzipTest(zipPath);
      expect(report).toContain('No errors detected in compressed data');
    });
  }, 600_000);
});

describe('an archive of more than 65,535 entries', () => {
  it('writes the zip64 end records on its own once there are 65,535 entries or more, and readers find them all', async () => {
    await withTempDir(async (dir) => {
      const zipPath = join(dir, 'media.zip');
      const archive = await openMediaArchive(...localFile(zipPath));
      const count = 65_540;
      const name = (i: number) => `s/r/${i}-audio.mp3`;
      for (let i = 0; i < count; i++)
        await archive.add(name(i), { kind: 'memory', data: Buffer.from([i & 0xff]) });
      expect((await archive.finish()).entries).toBe(count);
      const zip = await readFile(zipPath);
      const end = zip.length - 22;
      expect(zip.readUInt16LE(end + 10)).toBe(0xffff);
      expect(zip.readUInt32LE(end - 76)).toBe(0x06064b50);
      expect(zip.readBigUInt64LE(end - 76 + 32)).toBe(BigInt(count));
      // Offsets and sizes still fit in 32 bits: no entry has a zip64 extra field.
      const byYauzl = await zipFactsByYauzl(zipPath);
      expect(byYauzl.map((f) => f.name)).toEqual(Array.from({ length: count }, (_, i) => name(i)));
      expect(byYauzl.filter((f) => f.extraIds.length > 0 || f.size !== 1)).toEqual([]);
      expect(zipFactsByPython(zipPath)).toEqual(byYauzl);
      const report = unzipTest(zipPath);
      expect(report).toContain(`testing: ${name(count - 1)}`);
      expect(report).toContain('No errors detected in compressed data');
    });
  }, 600_000);
});
