/** downloadMedia against a tiny loopback server: what is retried, what is not, what is sent. */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { retryPolicy } from '../../src/http/retry.ts';
import { downloadMedia } from '../../src/media/download.ts';
import { MemoryBudget } from '../../src/media/memory-budget.ts';

let server: Server;
let base: string;
let dir: string;
const seen: { path: string; headers: IncomingHttpHeaders }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', headers: req.headers });
    if (req.url?.startsWith('/missing')) {
      res.writeHead(404).end();
    } else if (req.url?.startsWith('/short')) {
      // Promises 10 bytes, sends 5, then drops the connection.
      res.writeHead(200, { 'content-length': '10' });
      res.write('hello', () => res.destroy());
    } else if (req.url?.startsWith('/endless')) {
      // No Content-Length, and a body that never ends.
      res.writeHead(200, { 'content-type': 'video/mp4' });
      const chunk = Buffer.alloc(64 * 1024, 1);
      const more = () => {
        while (!res.destroyed && res.write(chunk)) {
          // until the socket's buffer is full
        }
        if (!res.destroyed) res.once('drain', more);
      };
      more();
    } else if (req.url?.startsWith('/huge')) {
      res.writeHead(200, { 'content-length': String(10 * 1024 * 1024) });
      res.write(Buffer.alloc(1024));
    } else if (req.url?.startsWith('/bounce')) {
      res.writeHead(302, { location: `${base}/file?sig=2` }).end();
    } else {
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': '5' }).end('hello');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  dir = await mkdtemp(join(tmpdir(), 'media-download-'));
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  seen.length = 0;
});

const options = (url: string, dest: string) => ({
  link: { url, issuedAt: Date.now() },
  refresh: async () => {
    throw new Error('no refresh expected');
  },
  dest,
  policy: retryPolicy({ retries: 3, backoff: { baseMs: 1 } }),
  timeoutMs: 2_000,
});

describe('downloadMedia', () => {
  it('streams to the file with its sha256 and sends no credential, even after a redirect', async () => {
    const dest = join(dir, 'a.part');
    const file = await downloadMedia(options(`${base}/bounce?sig=1`, dest));
    expect(await readFile(dest, 'utf8')).toBe('hello');
    expect(file).toMatchObject({ bytes: 5, contentType: 'audio/mpeg' });
    expect(file.sha256).toBe('2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824');
    expect(seen.map((s) => s.path)).toEqual(['/bounce?sig=1', '/file?sig=2']);
    for (const { headers } of seen) {
      expect(headers['x-api-key']).toBeUndefined();
      expect(headers.authorization).toBeUndefined();
      expect(headers.cookie).toBeUndefined();
    }
  });

  it('does not retry a 404 and names the URL without its query string', async () => {
    const dest = join(dir, 'b.part');
    const failure = downloadMedia(options(`${base}/missing?sig=secret`, dest));
    await expect(failure).rejects.toThrow(/answered 404/);
    await expect(failure).rejects.not.toThrow(/secret/);
    expect(seen).toHaveLength(1);
  });

  it('does not retry a temporary file that cannot be written', async () => {
    const dest = join(dir, 'no', 'such', 'dir', 'c.part');
    await expect(downloadMedia(options(`${base}/file`, dest))).rejects.toThrow(/temporary file/);
    expect(seen).toHaveLength(1);
  });

  it('keeps a body that fits the memory budget in memory, and writes no file', async () => {
    const dest = join(dir, 'm.part');
    const memory = new MemoryBudget(100, 50, 1);
    const file = await downloadMedia({ ...options(`${base}/file?sig=1`, dest), memory });
    expect(file.body).toEqual({ kind: 'memory', data: Buffer.from('hello') });
    expect(file.sha256).toBe('2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824');
    expect(memory.freeBytes).toBe(95); // the caller gives it back once the body is archived
    expect(existsSync(dest)).toBe(false);
  });

  it('writes a body larger than the budget allows to the file', async () => {
    const dest = join(dir, 'f.part');
    const memory = new MemoryBudget(100, 4);
    const file = await downloadMedia({ ...options(`${base}/file?sig=1`, dest), memory });
    expect(file.body).toEqual({ kind: 'file', path: dest });
    expect(await readFile(dest, 'utf8')).toBe('hello');
    expect(memory.freeBytes).toBe(100);
  });

  it('retries a short body and gives its memory back when it finally fails', async () => {
    const memory = new MemoryBudget(100, 50);
    const failure = downloadMedia({ ...options(`${base}/short?sig=1`, join(dir, 's.part')), memory });
    await expect(failure).rejects.toThrow(/gave up after 4 attempts/);
    expect(seen).toHaveLength(4);
    expect(memory.freeBytes).toBe(100);
  });

  it('stops an endless body at media.max_file_mib as it arrives, removes the partial file, does not retry', async () => {
    const dest = join(dir, 'e.part');
    const failure = downloadMedia({
      ...options(`${base}/endless?sig=secret`, dest),
      maxFileBytes: 1024 * 1024,
    });
    await expect(failure).rejects.toThrow(/sent more than media\.max_file_mib \(1 MiB\); stopped reading it/);
    await expect(failure).rejects.not.toThrow(/secret/);
    expect(seen).toHaveLength(1);
    expect(existsSync(dest)).toBe(false);
  });

  it('refuses a file whose Content-Length is beyond media.max_file_mib before reading it', async () => {
    const dest = join(dir, 'h.part');
    const failure = downloadMedia({ ...options(`${base}/huge?sig=1`, dest), maxFileBytes: 1024 * 1024 });
    await expect(failure).rejects.toThrow(
      /announced \d+ bytes \(Content-Length\), more than media\.max_file_mib \(1 MiB\); not downloaded/,
    );
    expect(seen).toHaveLength(1);
    expect(existsSync(dest)).toBe(false);
  });

  it('removes the partial file of a body that never arrived whole', async () => {
    const dest = join(dir, 'p.part');
    await expect(downloadMedia(options(`${base}/short?sig=1`, dest))).rejects.toThrow(
      /gave up after 4 attempts/,
    );
    expect(seen).toHaveLength(4);
    expect(existsSync(dest)).toBe(false);
  });
});
