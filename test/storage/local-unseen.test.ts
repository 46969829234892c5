/**
 * Where LocalStorage writes a file before it is complete. In the output folder a file is
 * written under a hidden name and renamed into place on close (a reader never sees half of
 * it); inside a staged run, unseen as a whole until its one rename, each file is written
 * under its own name, and an aborted one is removed.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.ts';
import { withTempDir } from '../helpers/environment.ts';

describe('LocalStorage: hidden names while writing', () => {
  it('writes an output file under a hidden name until it is closed', async () => {
    await withTempDir(async (dir) => {
      const file = await new LocalStorage(dir).create('tables/answers.csv');
      await file.write('response_id\n');
      const names = await readdir(join(dir, 'tables'));
      expect(names).toEqual([expect.stringMatching(/^\..*answers\.csv\.writing$/)]);
      await file.close();
      expect(await readdir(join(dir, 'tables'))).toEqual(['answers.csv']);
    });
  });

  it('writes a staged run file under its own name, in folders below too, and removes it on abort', async () => {
    await withTempDir(async (dir) => {
      const staged = await new LocalStorage(dir).stage('runs/r1');
      const file = await staged.files.create('wide/study-a.csv');
      await file.write('response_id\n');
      const wide = join(dir, 'runs', '.tmp-r1', 'wide');
      expect(await readdir(wide)).toEqual(['study-a.csv']);
      await file.close();
      expect(await readFile(join(wide, 'study-a.csv'), 'utf8')).toBe('response_id\n');
      // A storage of a folder inside it writes in place too.
      const inside = await staged.files.at('wide').create('study-b.csv');
      expect((await readdir(wide)).sort()).toEqual(['study-a.csv', 'study-b.csv']);
      await inside.close();

      const aborted = await staged.files.create('answers.csv');
      await aborted.write('response_id\n');
      await aborted.abort();
      expect(existsSync(join(dir, 'runs', '.tmp-r1', 'answers.csv'))).toBe(false);

      await staged.commit();
      expect(await readFile(join(dir, 'runs', 'r1', 'wide', 'study-a.csv'), 'utf8')).toBe('response_id\n');
    });
  });

  it('puts a small file into a folder it makes, replacing the old content, no temporary file left', async () => {
    await withTempDir(async (dir) => {
      const storage = new LocalStorage(dir);
      const put = await storage.put('state/s1.json', '{"a":1}\n');
      expect(put).toMatchObject({ path: 'state/s1.json', bytes: 8 });
      await storage.put('state/s1.json', '{"a":2}\n');
      expect(await readdir(join(dir, 'state'))).toEqual(['s1.json']);
      expect(await readFile(join(dir, 'state', 's1.json'), 'utf8')).toBe('{"a":2}\n');
      // In a staged run too, into a folder made for it.
      const staged = await storage.stage('runs/r1');
      await staged.files.put('sub/manifest.json', '{}\n');
      expect(await readdir(join(dir, 'runs', '.tmp-r1', 'sub'))).toEqual(['manifest.json']);
    });
  });
});
