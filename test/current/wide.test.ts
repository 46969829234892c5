/**
 * The current wide sheet built through hash slices (big studies) holds the same rows as built in
 * memory, and as the run's own sheet: answers, attributes, status and modality.
 */

import { mkdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import { newestPart, partitionPath, repairCurrent, wideFolder } from '../../src/current/index.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readCsv } from '../helpers/readers.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeEach(async () => {
  sandbox = await startSandbox({ seed: 4, studies: 1, responses: 60 });
});
afterEach(async () => {
  await sandbox.close();
});

describe('the current wide sheet', () => {
  it('is the same, row for row, when built again through hash slices', async () => {
    await withTempDir(async (out) => {
      const { runDir } = await runAgainst(
        sandbox,
        sandboxConfig(sandbox, out, { output: { formats: ['parquet'] } }),
      );
      const store = new LocalStorage(join(out, 'test'));
      const [study] = sandbox.studies();
      const sheetFile = join(out, 'test', wideFolder(study!.id), `${study!.link_id}.csv`);
      const sheet = async () => {
        const [header, ...rows] = (await readCsv(sheetFile)).records;
        return { header, rows: rows.map((row) => JSON.stringify(row)).sort() };
      };
      // The run's own sheet, built in memory: a study this small is one slice.
      const inMemory = await sheet();
      expect(inMemory.rows).toHaveLength(60);
      // With the attributes the sandbox's links carry, and each response's status and modality.
      expect(inMemory.header).toEqual(
        expect.arrayContaining(['status', 'modality', 'attribute: utm_source']),
      );
      const answers = partitionPath('answers', bucketOf(study!.id));
      const files: { path: string; bytes: number }[] = [];
      for await (const file of store.list(answers)) files.push(file);
      const newest = newestPart(files.map((file) => file.path));
      const answerBytes = files.find((file) => file.path === newest)!.bytes;
      // Gone, and built again from current/'s parts in four slices or more.
      await rm(join(out, 'test', wideFolder(study!.id)), { recursive: true });
      const scratchDir = join(out, 'scratch');
      await mkdir(scratchDir);
      await repairCurrent(
        {
          store,
          name: 'test',
          formats: ['parquet'],
          csv: { bom: false, escape_formulae: true },
          scratchDir,
          sliceBytes: Math.ceil(answerBytes / 4),
        },
        basename(runDir!),
        [{ study_id: study!.id, wide: true }],
      );
      expect(await sheet()).toEqual(inMemory);
    });
  });
});
