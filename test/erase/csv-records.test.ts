/**
 * A CSV file filtered as bytes: records found across quoted line breaks and chunk boundaries,
 * a row whose text merely quotes an erased id kept, every kept byte as it was; the result read
 * back by papaparse.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Papa from 'papaparse';
import { expect, it } from 'vitest';
import { filterCsvRecords } from '../../src/erase/csv-records.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import type { Storage } from '../../src/storage/types.ts';
import { withTempDir } from '../helpers/environment.ts';

const gone = 'a1b2c3d4-0000-4000-8000-000000000001';
const kept = 'a1b2c3d4-0000-4000-8000-000000000002';

const header = 'answer_id,response_id,answer\r\n';
const records = [
  `x1,${kept},"plain"\r\n`,
  `x2,${gone},"line one\r\nline two, ""quoted"" ${gone}"\r\n`,
  `x3,${kept},"says ${gone} in its text\nand breaks"\r\n`,
  `x4,${gone},=1+1\r\n`,
  `x5,${kept},"""starts with a quote"""\r\n`,
];

/** A storage whose streams hand the file over a few bytes at a time. */
function inSmallChunks(storage: Storage, size: number): Storage {
  return Object.assign(Object.create(storage) as Storage, {
    async readStream(path: string) {
      const { Readable } = await import('node:stream');
      const bytes = (await storage.read(path)) as Buffer;
      const chunks: Buffer[] = [];
      for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, at + size));
      return Readable.from(chunks);
    },
  });
}

it.each([1, 7, 64, 1 << 20])(
  'keeps every record but the erased ones, byte for byte (chunks of %i)',
  async (size) => {
    await withTempDir(async (dir) => {
      const input = `\ufeff${header}${records.join('')}`;
      await writeFile(join(dir, 'in.csv'), input);
      const from = inSmallChunks(new LocalStorage(dir), size);
      const to = new LocalStorage(join(dir, 'out'), { unseen: true });
      const { mkdir } = await import('node:fs/promises');
      await mkdir(join(dir, 'out'));
      await writeFile(join(dir, 'out', '.keep'), '');
      const removed = await filterCsvRecords(from, to, 'in.csv', 'response_id', new Set([gone]));
      expect(removed).toBe(2);
      const written = await readFile(join(dir, 'out', 'in.csv'), 'utf8');
      expect(written).toBe(`\ufeff${header}${records[0]}${records[2]}${records[4]}`);
      const parsed = Papa.parse<string[]>(written.replace(/^\ufeff/, ''), { skipEmptyLines: true });
      expect(parsed.errors).toEqual([]);
      expect(parsed.data.map((row) => row[0])).toEqual(['answer_id', 'x1', 'x3', 'x5']);
      expect(parsed.data[2]?.[2]).toBe(`says ${gone} in its text\nand breaks`);
    });
  },
);

it('names the file when it has no such column', async () => {
  await withTempDir(async (dir) => {
    await writeFile(join(dir, 'in.csv'), header);
    const storage = new LocalStorage(dir);
    await expect(filterCsvRecords(storage, storage, 'in.csv', 'study_id', new Set([gone]))).rejects.toThrow(
      /in\.csv: no column study_id/,
    );
  });
});
