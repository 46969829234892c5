import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openMediaArchive } from '../../src/media/archive.ts';
import type { MediaBody } from '../../src/media/types.ts';
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

describe('openMediaArchive', () => {
  it('writes stored entries, from files and from memory, that read back byte for byte', async () => {
    const zipPath = join(dir, 'media.zip');
    const archive = await openMediaArchive(zipPath);
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

  it('writes a valid empty zip when there is no media', async () => {
    const zipPath = join(dir, 'media.zip');
    const archive = await openMediaArchive(zipPath);
    expect((await archive.finish()).entries).toBe(0);
    expect(await readZip(zipPath)).toEqual([]);
  });

  it('rejects an add whose file is missing and keeps going', async () => {
    const zipPath = join(dir, 'media.zip');
    const archive = await openMediaArchive(zipPath);
    await expect(
      archive.add('s/r/1-audio.mp3', { kind: 'file', path: join(dir, 'missing.part') }),
    ).rejects.toThrow();
    await archive.add('s/r/2-audio.mp3', await tempFile('c.part', Buffer.from('ok')));
    await archive.finish();
    expect((await readZip(zipPath)).map((e) => e.name)).toEqual(['s/r/2-audio.mp3']);
  });

  it('abort removes the partial zip and refuses further entries', async () => {
    const zipPath = join(dir, 'media.zip');
    const archive = await openMediaArchive(zipPath);
    await archive.add('s/r/1-audio.mp3', await tempFile('d.part', Buffer.alloc(100_000, 1)));
    expect(existsSync(zipPath)).toBe(true);
    await archive.abort();
    expect(existsSync(zipPath)).toBe(false);
    await expect(archive.add('s/r/2-audio.mp3', await tempFile('e.part', Buffer.from('x')))).rejects.toThrow(
      /aborted/,
    );
    await expect(archive.finish()).rejects.toThrow(/aborted/);
  });

  it('abort during an entry rejects that add and removes the zip', async () => {
    const zipPath = join(dir, 'media.zip');
    const archive = await openMediaArchive(zipPath);
    const adding = archive.add('s/r/1-video.mp4', await tempFile('f.part', Buffer.alloc(20_000_000, 3)));
    await new Promise((resolve) => setImmediate(resolve));
    await archive.abort();
    await expect(adding).rejects.toThrow(/aborted/);
    expect(existsSync(zipPath)).toBe(false);
  });

  it('fails to open where the zip cannot be written', async () => {
    await expect(openMediaArchive(join(dir, 'no', 'such', 'media.zip'))).rejects.toThrow();
  });
});
