import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { createSortedSpill } from '../../src/output/sorted-spill.ts';
import { withTempDir } from '../helpers/environment.ts';

interface Item {
  n: number | null;
  id: string;
  text: string;
}

const byN = (a: Item, b: Item) => {
  if (a.n !== b.n) return a.n === null ? 1 : b.n === null ? -1 : a.n - b.n;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
};

/** A deterministic shuffle (a linear congruential generator), so a failure can be replayed. */
function shuffled<T>(values: readonly T[], seed: number): T[] {
  const out = [...values];
  let state = seed;
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

const items = (count: number): Item[] =>
  Array.from({ length: count }, (_, i) => ({
    n: i % 7 === 3 ? null : i,
    id: `r-${String(i).padStart(5, '0')}`,
    text: `answer ${i} ${'x'.repeat(i % 50)} 日本`,
  }));

async function sortThrough(values: readonly Item[], dir: string, runBytes: number, fanIn?: number) {
  const spill = createSortedSpill<Item, Item>({
    dir,
    name: 'items',
    keyOf: (item) => ({ ...item, text: '' }),
    compare: byN,
    runBytes,
    fanIn,
  });
  await Promise.all(values.map((value) => spill.add(value)));
  const runFiles = (await readdir(dir)).length;
  const out: Item[] = [];
  for await (const value of spill.sorted()) out.push(value);
  return { out, runFiles, left: await readdir(dir) };
}

describe('createSortedSpill', () => {
  it('sorts in memory when everything fits, writing nothing', async () => {
    await withTempDir(async (dir) => {
      const all = items(200);
      const { out, runFiles, left } = await sortThrough(shuffled(all, 1), dir, 2 ** 30);
      expect(runFiles).toBe(0);
      expect(out).toEqual([...all].sort(byN));
      expect(left).toEqual([]);
    });
  });

  it('merges sorted runs from disk, in groups when there are more runs than it opens at once', async () => {
    await withTempDir(async (dir) => {
      const all = items(3000);
      const expected = [...all].sort(byN);
      // About 2 KB a run: more than a hundred runs, merged 8 at a time.
      const { out, runFiles, left } = await sortThrough(shuffled(all, 7), dir, 2048, 8);
      expect(runFiles).toBeGreaterThan(100);
      expect(out.length).toBe(all.length);
      expect(out).toEqual(expected);
      // Rows without a number come last, by id.
      expect(out.at(-1)?.n).toBeNull();
      expect(out.findIndex((item) => item.n === null)).toBe(all.filter((i) => i.n !== null).length);
      expect(left).toEqual([]);
    });
  });

  it('reads back values longer than its read chunk whole, a character split across chunks intact', async () => {
    await withTempDir(async (dir) => {
      // 40,000 characters of four-byte emoji, CJK and Arabic: lines cross many 16 KiB chunks.
      const long = (i: number) => `${'😀日本عربي'.repeat(5000)}${i}`.slice(i % 3);
      const all = items(60).map((item, i) => (i % 4 === 1 ? { ...item, text: long(i) } : item));
      const { out, runFiles, left } = await sortThrough(shuffled(all, 3), dir, 64 * 1024, 4);
      expect(runFiles).toBeGreaterThan(4);
      expect(out).toEqual([...all].sort(byN));
      expect(out.filter((item) => item.text.length > 30_000).length).toBe(15);
      expect(left).toEqual([]);
    });
  });

  it('removes its runs when abandoned', async () => {
    await withTempDir(async (dir) => {
      const spill = createSortedSpill<Item, Item>({
        dir,
        name: 'items',
        keyOf: (item) => item,
        compare: byN,
        runBytes: 512,
      });
      for (const item of items(100)) await spill.add(item);
      expect((await readdir(dir)).length).toBeGreaterThan(1);
      await spill.remove();
      expect(await readdir(dir)).toEqual([]);
    });
  });
});
