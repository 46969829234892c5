import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bufferedZipEntries, walkStoredZip } from '../../../src/output/codecs/zip-reader.ts';
import { openMediaArchive } from '../../../src/output/codecs/zip-writer.ts';
import { LocalStorage } from '../../../src/storage/local.ts';
import { localFile } from '../../helpers/storage.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'zip-reader-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const first = Buffer.alloc(200_000, 1);
const second = Buffer.from('the second entry');

async function twoEntries(): Promise<{ path: string; bytes: number }> {
  const path = join(dir, 'media.zip');
  const archive = await openMediaArchive(...localFile(path));
  await archive.add('s/r/1-audio.mp3', { kind: 'memory', data: first });
  await archive.add('s/r/2-audio.mp3', { kind: 'stream', size: second.length, open: async () => [second] });
  const { bytes } = await archive.finish();
  return { path, bytes };
}

describe('walkStoredZip', () => {
  it('hands each entry to the visit in order, and counts folders it does not visit', async () => {
    const { bytes } = await twoEntries();
    const seen: [string, number][] = [];
    const entries = await walkStoredZip(new LocalStorage(dir), 'media.zip', bytes, async (name, stream) => {
      let size = 0;
      for await (const chunk of stream) size += (chunk as Buffer).length;
      seen.push([name, size]);
    });
    expect(entries).toBe(2);
    expect(seen).toEqual([
      ['s/r/1-audio.mp3', first.length],
      ['s/r/2-audio.mp3', second.length],
    ]);
    // A zip with a folder entry, written by Info-ZIP's zip.
    await writeFile(join(dir, 'a.txt'), 'a');
    await mkdir(join(dir, 'sub'));
    execFileSync('zip', ['-q', 'with-folder.zip', 'sub', 'a.txt'], { cwd: dir });
    const withFolder = (await readFile(join(dir, 'with-folder.zip'))).length;
    const names: string[] = [];
    const counted = await walkStoredZip(
      new LocalStorage(dir),
      'with-folder.zip',
      withFolder,
      async (name) => {
        names.push(name);
      },
    );
    expect(counted).toBe(2);
    expect(names).toEqual(['a.txt']);
  });

  it('reads to its end what a visit leaves unread, and stops at an entry that cannot be read', async () => {
    const { bytes } = await twoEntries();
    let read = 0;
    const counting = new LocalStorage(dir);
    const readStream = counting.readStream.bind(counting);
    counting.readStream = async (path, range) => {
      const stream = await readStream(path, range);
      stream.on('data', (chunk: Buffer) => {
        read += chunk.length;
      });
      return stream;
    };
    await walkStoredZip(counting, 'media.zip', bytes, async () => {});
    expect(read).toBeGreaterThanOrEqual(first.length + second.length);
    // The central directory gives the first (stored) entry two sizes: the walk fails.
    const path = join(dir, 'media.zip');
    const zip = await readFile(path);
    const central = zip.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    zip.writeUInt32LE(first.length + 1, central + 24);
    await writeFile(path, zip);
    await expect(walkStoredZip(new LocalStorage(dir), 'media.zip', bytes, async () => {})).rejects.toThrow();
  });
});

describe('bufferedZipEntries', () => {
  it('reads whole the entries it is asked for, and only those', async () => {
    const { path } = await twoEntries();
    const entries = await bufferedZipEntries(await readFile(path), (name) => name.endsWith('2-audio.mp3'));
    expect(entries).toEqual([{ name: 's/r/2-audio.mp3', data: second }]);
  });
});
