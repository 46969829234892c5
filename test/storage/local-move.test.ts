/**
 * LocalStorage.moveIn and moveFolderIn, how the current dataset's prepared parts reach the
 * output folder: a rename on the same file system, a copy renamed into place from another (a
 * scratch folder on tmpfs), and in both cases nothing but the whole file under its name; a
 * partition's first part as its whole folder, or nothing moved.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.ts';
import { withTempDir } from '../helpers/environment.ts';

const content = 'response_id,answer\nr1,"yes"\n'.repeat(1000);

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

describe('LocalStorage.moveIn', () => {
  it('renames a file of the same file system into place, making its folders', async () => {
    await withTempDir(async (dir) => {
      const local = join(dir, 'scratch.csv');
      await writeFile(local, content);
      const store = new LocalStorage(join(dir, 'out'));
      await mkdir(join(dir, 'out'));
      await store.moveIn(local, 'current/answers/study_id=s1/part-1.csv');
      const target = join(dir, 'out', 'current', 'answers', 'study_id=s1', 'part-1.csv');
      expect(await readFile(target, 'utf8')).toBe(content);
      expect(await filesUnder(join(dir, 'out'))).toEqual([target]);
    });
  });

  it('renames into a folder that is already there, beside the files it holds', async () => {
    await withTempDir(async (dir) => {
      const store = new LocalStorage(dir);
      const folder = join(dir, 'current', 'answers', 'study_id=s1');
      for (const format of ['csv', 'parquet']) {
        const local = join(dir, `scratch.${format}`);
        await writeFile(local, `${format}:${content}`);
        await store.moveIn(local, `current/answers/study_id=s1/part-1.${format}`);
      }
      expect(await readFile(join(folder, 'part-1.csv'), 'utf8')).toBe(`csv:${content}`);
      expect(await readFile(join(folder, 'part-1.parquet'), 'utf8')).toBe(`parquet:${content}`);
      expect((await filesUnder(dir)).sort()).toEqual([
        join(folder, 'part-1.csv'),
        join(folder, 'part-1.parquet'),
      ]);
    });
  });

  it('fails on a missing local file, naming it', async () => {
    await withTempDir(async (dir) => {
      const store = new LocalStorage(dir);
      const missing = join(dir, 'never-written.csv');
      await expect(store.moveIn(missing, 'current/answers/study_id=s1/part-1.csv')).rejects.toMatchObject({
        code: 'ENOENT',
        path: missing,
      });
    });
  });

  it('copies a file from another file system (tmpfs) and renames the copy into place', async () => {
    // /dev/shm is a tmpfs on these machines, a different device from the temp folder.
    const shm = await mkdtemp('/dev/shm/study-export-test-');
    try {
      await withTempDir(async (dir) => {
        expect((await stat(shm)).dev, '/dev/shm must be another file system').not.toBe((await stat(dir)).dev);
        const local = join(shm, 'scratch.csv');
        await writeFile(local, content);
        const store = new LocalStorage(dir);
        await writeFile(join(dir, 'part.csv'), 'the previous content');
        await store.moveIn(local, 'part.csv');
        expect(await readFile(join(dir, 'part.csv'), 'utf8')).toBe(content);
        // Into a folder not made yet: made, then the copy.
        await writeFile(local, content);
        await store.moveIn(local, 'current/answers/study_id=s1/part-1.csv');
        const made = join(dir, 'current', 'answers', 'study_id=s1', 'part-1.csv');
        expect(await readFile(made, 'utf8')).toBe(content);
        // No hidden copy left beside either.
        expect((await filesUnder(dir)).sort()).toEqual([made, join(dir, 'part.csv')]);
      });
    } finally {
      await rm(shm, { recursive: true, force: true });
    }
  });
});

describe('LocalStorage.moveFolderIn', () => {
  const prepare = async (folder: string) => {
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'part-1.parquet'), `parquet:${content}`);
    await writeFile(join(folder, 'part-1.csv'), `csv:${content}`);
  };

  it('renames a new folder into place whole, making the folders above it', async () => {
    await withTempDir(async (dir) => {
      const local = join(dir, 'scratch', 'answers');
      await prepare(local);
      const store = new LocalStorage(join(dir, 'out'));
      await mkdir(join(dir, 'out'));
      expect(await store.moveFolderIn(local, 'current/answers/study_id=s1')).toBe(true);
      const folder = join(dir, 'out', 'current', 'answers', 'study_id=s1');
      expect(await readFile(join(folder, 'part-1.csv'), 'utf8')).toBe(`csv:${content}`);
      expect(await readFile(join(folder, 'part-1.parquet'), 'utf8')).toBe(`parquet:${content}`);
      expect(await filesUnder(join(dir, 'scratch'))).toEqual([]);
    });
  });

  it('leaves everything where it is when the folder is already there', async () => {
    await withTempDir(async (dir) => {
      const local = join(dir, 'scratch', 'answers');
      await prepare(local);
      const store = new LocalStorage(dir);
      const existing = join(dir, 'current', 'answers', 'study_id=s1');
      await mkdir(existing, { recursive: true });
      await writeFile(join(existing, 'part-0.parquet'), 'the previous part');
      expect(await store.moveFolderIn(local, 'current/answers/study_id=s1')).toBe(false);
      expect(await filesUnder(existing)).toEqual([join(existing, 'part-0.parquet')]);
      expect((await filesUnder(local)).sort()).toEqual([
        join(local, 'part-1.csv'),
        join(local, 'part-1.parquet'),
      ]);
    });
  });

  it('says no for a folder on another file system (tmpfs), moving nothing', async () => {
    const shm = await mkdtemp('/dev/shm/study-export-test-');
    try {
      await withTempDir(async (dir) => {
        const local = join(shm, 'answers');
        await prepare(local);
        const store = new LocalStorage(dir);
        expect(await store.moveFolderIn(local, 'current/answers/study_id=s1')).toBe(false);
        expect(await filesUnder(local)).toHaveLength(2);
        expect(await filesUnder(dir)).toEqual([]);
      });
    } finally {
      await rm(shm, { recursive: true, force: true });
    }
  });
});
