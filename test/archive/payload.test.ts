/**
 * The payload's bookkeeping: every file's manifest lines gathered in a scratch file in the order
 * added, the counts Payload-Oxum gives, digests kept only of the files datapackage.json
 * describes, and a case-only twin or an unportable name refused.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { memoryFile, Payload } from '../../src/archive/payload.ts';
import { type BagFile, type BagSink, copyHashed } from '../../src/archive/sink.ts';
import { withTempDir } from '../helpers/environment.ts';

/** A sink that only hashes what it is given. */
function hashingSink(): BagSink & { paths: string[] } {
  const paths: string[] = [];
  return {
    location: 'memory',
    paths,
    add: async (file: BagFile) => {
      paths.push(file.path);
      return copyHashed(file, async () => {});
    },
    finish: async () => {},
    abort: async () => {},
  };
}

const sha = (algorithm: string, text: string) => createHash(algorithm).update(text).digest('hex');

describe('the payload', () => {
  it('writes each manifest line as a file is added and keeps only described digests', async () => {
    await withTempDir(async (dir) => {
      const sink = hashingSink();
      const payload = new Payload(sink, dir);
      // More lines than one batch, so the scratch file is appended to more than once.
      const many = Array.from({ length: 1500 }, (_, i) => `data/conversations/r-${i}.txt`);
      for (const path of many) await payload.add(memoryFile(path, path));
      await payload.add(memoryFile('data/README.md', 'read me\n'), { described: true });
      expect(payload.files).toBe(1501);
      expect(payload.bytes).toBe(many.reduce((sum, path) => sum + path.length, 0) + 8);
      expect(payload.digestsOf('README.md')).toEqual({
        bytes: 8,
        sha256: sha('sha256', 'read me\n'),
        sha512: sha('sha512', 'read me\n'),
      });
      expect(payload.digestsOf(many[0]?.slice('data/'.length) ?? '')).toBeUndefined();
      const manifests = await payload.manifests();
      for (const algorithm of ['sha256', 'sha512'] as const) {
        const lines = (await readFile(manifests[algorithm], 'utf8')).split('\n');
        expect(lines).toHaveLength(1502);
        expect(lines[0]).toBe(`${sha(algorithm, many[0] ?? '')}  ${many[0]}`);
        expect(lines[1500]).toBe(`${sha(algorithm, 'read me\n')}  data/README.md`);
      }
    });
  });

  it('refuses a case-only twin of a file added before, and a name a manifest cannot hold', async () => {
    await withTempDir(async (dir) => {
      const sink = hashingSink();
      const payload = new Payload(sink, dir);
      for (let i = 0; i < 1500; i++) await payload.add(memoryFile(`data/r-${i}.txt`, ''));
      await expect(payload.add(memoryFile('data/R-7.TXT', ''))).rejects.toThrow(
        'data/R-7.TXT: not a portable, distinct payload path',
      );
      await expect(payload.add(memoryFile('data/100%.txt', ''))).rejects.toThrow('not a portable');
      await payload.add(memoryFile('data/r-1500.txt', ''));
      expect(sink.paths).toHaveLength(1501);
      expect(payload.files).toBe(1501);
    });
  });
});
