/**
 * The bag's tar, read by GNU tar: a path over 100 bytes and one not in ASCII come back whole
 * (pax headers), the bytes exactly; and `verify`'s tar reader reads the same entries back.
 * The tag files' formats: Payload-Oxum, Bag-Size, and a manifest's lines parsed back.
 */
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { bagSize, manifestTxt, parseManifest, payloadOxum } from '../../src/archive/tags.ts';
import { readTar } from '../../src/archive/tar-reader.ts';
import { openTarSink } from '../../src/archive/tar-sink.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { withTempDir } from '../helpers/environment.ts';

const run = promisify(execFile);

describe('the bag as tar', () => {
  it('keeps long and non-ASCII paths whole for GNU tar and for its own reader', async () => {
    await withTempDir(async (dir) => {
      const long = `data/${'a'.repeat(60)}/${'b'.repeat(60)}.txt`;
      const files = [
        { path: long, content: Buffer.from('long name\n') },
        { path: 'data/café/ünïcode.txt', content: Buffer.from('accents\n') },
        { path: 'data/empty.txt', content: Buffer.alloc(0) },
        { path: 'data/block.bin', content: Buffer.alloc(512, 7) },
      ];
      const sink = await openTarSink(
        new LocalStorage(dir),
        'bag.tar',
        'bag',
        new Date('2026-11-21T23:55:00Z'),
      );
      for (const file of files)
        await sink.add({ path: file.path, size: file.content.length, open: async () => [file.content] });
      await sink.finish();
      const tar = join(dir, 'bag.tar');

      const { stdout } = await run('tar', ['-tvf', tar], { env: { ...process.env, TZ: 'UTC' } });
      expect(
        stdout
          .trim()
          .split('\n')
          .map((line) => line.split(/\s+/).slice(5).join(' ')),
      ).toEqual(files.map((file) => `bag/${file.path}`));
      expect(stdout).toContain('2026-11-21 23:55');
      await run('tar', ['-xf', tar, '-C', dir]);
      for (const file of files) expect(await readFile(join(dir, 'bag', file.path))).toEqual(file.content);

      const read: { path: string; content: Buffer }[] = [];
      await readTar(createReadStream(tar), async (entry, bytes) => {
        const chunks: Buffer[] = [];
        for await (const chunk of bytes) chunks.push(chunk);
        read.push({ path: entry.path, content: Buffer.concat(chunks) });
      });
      expect(read).toEqual(files.map((file) => ({ path: `bag/${file.path}`, content: file.content })));
    });
  });

  it('writes the tag files as RFC 8493 gives them', () => {
    const digests = (bytes: number) => ({ bytes, sha256: 'ab'.repeat(32), sha512: 'cd'.repeat(64) });
    const files = [
      { path: 'data/a.csv', digests: digests(1200) },
      { path: 'data/b c.txt', digests: digests(34) },
    ];
    const payloadBytes = files.reduce((sum, file) => sum + file.digests.bytes, 0);
    expect(payloadOxum(payloadBytes, files.length)).toBe('1234.2');
    expect(bagSize(512)).toBe('512 bytes');
    expect(bagSize(2_500_000)).toBe('2.50 MB');
    const text = manifestTxt(files, 'sha256');
    expect(text).toBe(`${'ab'.repeat(32)}  data/a.csv\n${'ab'.repeat(32)}  data/b c.txt\n`);
    const parsed = parseManifest(`${text}nonsense\n`, 'manifest-sha256.txt');
    expect([...parsed.entries.keys()]).toEqual(['data/a.csv', 'data/b c.txt']);
    expect(parsed.problems).toEqual(['manifest-sha256.txt line 3: not "<digest> <path>"']);
  });
});
