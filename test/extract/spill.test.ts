/** The listing's spill file: a temporary file that never outlives its listing. */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listResponses } from '../../src/extract/index.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import { memorySinks, sandboxClient } from './helpers.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'study-export-test-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('listing spill file', () => {
  it('is removed when the listing ends and when the consumer stops early', async () => {
    const sandbox = await startSandbox({ seed: 2, studies: 1, responses: 10 });
    const client = sandboxClient(sandbox);
    try {
      const study = sandbox.studies()[0]!;
      const options = { perPage: 3, includeInProgress: true, spillDir: dir };
      for await (const _ of listResponses(client, study, options, memorySinks())) {
        expect((await readdir(dir)).length).toBe(1);
      }
      expect(await readdir(dir)).toEqual([]);
      for await (const _ of listResponses(client, study, options, memorySinks())) break;
      expect(await readdir(dir)).toEqual([]);
      expect(existsSync(dir)).toBe(true);
    } finally {
      client.close();
      await sandbox.close();
    }
  });
});
