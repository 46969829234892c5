/** The listing's spill: in memory while small, else a temporary file that never outlives its listing. */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listResponses } from '../../src/extract/index.ts';
import { Spill } from '../../src/extract/spill.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import { memorySinks, sandboxClient } from '../helpers/extract.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'study-export-test-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function readAll(spill: Spill): Promise<unknown[]> {
  const values: unknown[] = [];
  for await (const value of spill.read()) values.push(value);
  return values;
}

describe('listing spill', () => {
  it('keeps a listing in memory up to its size as received, then every value in a file, in order', async () => {
    const values = Array.from({ length: 10 }, (_, i) => ({ id: `r${i}`, text: 'x'.repeat(i) }));
    const small = new Spill(dir, 100);
    for (const value of values.slice(0, 4)) small.add(value, 25);
    await small.drained();
    await small.finish();
    expect(await readdir(dir)).toEqual([]);
    expect(await readAll(small)).toEqual(values.slice(0, 4));

    const large = new Spill(dir, 100);
    for (const value of values) large.add(value, 25);
    await large.drained();
    expect((await readdir(dir)).length).toBe(1);
    await large.finish();
    expect(await readAll(large)).toEqual(values);
    await large.remove();
    expect(await readdir(dir)).toEqual([]);

    const unknownSize = new Spill(dir, 100);
    unknownSize.add(values[0], undefined);
    expect((await readdir(dir)).length).toBe(1);
    await unknownSize.remove();
  });

  it('is removed when the listing ends and when the consumer stops early', async () => {
    const sandbox = await startSandbox({ seed: 2, studies: 1, responses: 10 });
    const client = sandboxClient(sandbox);
    try {
      const study = sandbox.studies()[0]!;
      // Nothing in memory: the file is made at the first response.
      const options = { perPage: 3, includeInProgress: true, spillDir: dir, spillMemoryBytes: 0 };
      let seen = 0;
      for await (const _ of listResponses(client, study, options, memorySinks())) {
        seen += 1;
        expect((await readdir(dir)).length).toBe(1);
      }
      expect(seen).toBeGreaterThan(0);
      expect(await readdir(dir)).toEqual([]);
      for await (const _ of listResponses(client, study, options, memorySinks())) break;
      expect(await readdir(dir)).toEqual([]);
      expect(existsSync(dir)).toBe(true);
      // With the default, a listing this small makes no file at all.
      const inMemory = { ...options, spillMemoryBytes: undefined };
      for await (const _ of listResponses(client, study, inMemory, memorySinks())) {
        expect(await readdir(dir)).toEqual([]);
      }
    } finally {
      client.close();
      await sandbox.close();
    }
  });
});
