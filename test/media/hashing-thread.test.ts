import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { crc32 } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { HashingThread } from '../../src/media/hashing-thread.ts';

const MiB = 1024 * 1024;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

describe('HashingThread', () => {
  let thread: HashingThread;
  afterEach(async () => {
    await thread.close();
  });

  it('gives the SHA-256 and CRC-32 of whole bodies, across the buffers they travel in, and leaves them intact', async () => {
    thread = new HashingThread();
    const bodies = [0, 1, 1000, MiB, 2.5 * MiB + 3].map((size) => randomBytes(size));
    const copies = bodies.map((body) => Buffer.from(body));
    const digests = await Promise.all(bodies.map((body) => thread.digestBody(body)));
    for (const [i, body] of bodies.entries()) {
      expect(digests[i]).toEqual({ sha256: sha256(body), crc32: crc32(body) });
      expect(body.equals(copies[i] as Buffer)).toBe(true);
    }
  });

  it('hashes a file in the order it was written, waiting when its bytes in flight reach the limit', async () => {
    thread = new HashingThread(2 * MiB);
    const running = thread.runningSha256();
    const whole = createHash('sha256');
    // One buffer reused for every write, as a writer may once update resolves.
    const scratch = Buffer.alloc(3 * MiB);
    for (let i = 0; i < 40; i++) {
      const chunk = scratch.subarray(0, (i * 97_531) % (3 * MiB));
      chunk.fill(i);
      whole.update(chunk);
      await running.update(chunk);
    }
    expect(await running.digest()).toBe(whole.digest('hex'));
  });

  it('keeps files apart: bodies digested while a running hash is fed', async () => {
    thread = new HashingThread();
    const running = thread.runningSha256();
    const body = randomBytes(3 * MiB);
    const [digest] = await Promise.all([thread.digestBody(body), running.update(Buffer.from('zip header'))]);
    await running.update(body);
    expect(digest?.sha256).toBe(sha256(body));
    expect(await running.digest()).toBe(sha256(Buffer.concat([Buffer.from('zip header'), body])));
  });

  it('reads shared bytes where they lie, in order with copied ones, and is done with them when update resolves', async () => {
    thread = new HashingThread();
    const shared = Buffer.from(new SharedArrayBuffer(3 * MiB));
    const running = thread.runningSha256();
    const whole = createHash('sha256');
    // Small copied writes between large shared ones, and one shared write too short to be
    // worth a message; the memory is overwritten as soon as each update resolves.
    for (const [i, size] of [MiB, 100, 2 * MiB + 5, 70_000, 10, 3 * MiB].entries()) {
      const header = Buffer.from(`header ${i}`);
      const body = shared.subarray(0, size);
      body.set(randomBytes(size));
      whole.update(header).update(body);
      expect(await thread.digestBody(body)).toEqual({ sha256: sha256(body), crc32: crc32(body) });
      await running.update(header);
      await running.update(body);
      body.fill(0xff);
    }
    expect(await running.digest()).toBe(whole.digest('hex'));
  });

  it('reads and digests a finished file itself, and names a file it cannot read', async () => {
    thread = new HashingThread();
    const dir = await mkdtemp(join(tmpdir(), 'hashing-thread-'));
    try {
      const body = randomBytes(2.5 * MiB + 7);
      await writeFile(join(dir, 'body.part'), body);
      expect(await thread.digestFile(join(dir, 'body.part'))).toEqual({
        sha256: sha256(body),
        crc32: crc32(body),
      });
      await expect(thread.digestFile(join(dir, 'gone.part'))).rejects.toThrow(
        /hashing thread could not read a file: .*gone\.part/,
      );
      // The thread carries on.
      expect((await thread.digestBody(body)).sha256).toBe(sha256(body));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('fails what is asked once it is closed, with a clear error', async () => {
    thread = new HashingThread();
    await thread.digestBody(Buffer.from('x'));
    await thread.close();
    await expect(thread.digestBody(Buffer.from('y'))).rejects.toThrow(/hashing thread was closed/);
  });

  it('does not keep the process alive once it owes nothing, even if never closed, nor when warmed up and never asked', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hashing-thread-'));
    const script = join(dir, 'idle.mts');
    const module = new URL('../../src/media/hashing-thread.ts', import.meta.url).pathname;
    await writeFile(
      script,
      `import { HashingThread } from ${JSON.stringify(module)};\n` +
        `const thread = new HashingThread();\n` +
        `const digest = await thread.digestBody(Buffer.from('abc'));\n` +
        `console.log(digest.sha256);\n` +
        `new HashingThread().warmUp();\n`,
    );
    try {
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], {
        cwd: new URL('../..', import.meta.url).pathname,
        timeout: 20_000,
      });
      expect(stdout.trim()).toBe(sha256(Buffer.from('abc')));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
