/**
 * The current wide sheet built through hash slices (big studies) holds the same rows as built in
 * memory, and as the run's own sheet: answers, attributes, status and modality.
 */

import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import { partitionPath } from '../../src/current/parts.ts';
import { prepareCurrentWide } from '../../src/current/wide.ts';
import { readPart } from '../../src/output/formats/parquet-read.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import type { Row } from '../../src/tables/index.ts';
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
  it('is the same, row for row, when built through hash slices', async () => {
    await withTempDir(async (out) => {
      await runAgainst(sandbox, sandboxConfig(sandbox, out, { output: { formats: ['parquet'] } }));
      const store = new LocalStorage(join(out, 'test'));
      const [study] = sandbox.studies();
      const part = async (table: 'questions' | 'responses' | 'answers' | 'attributes') => {
        const folder = partitionPath(table, bucketOf(study!.id));
        for await (const file of store.list(folder))
          return { path: `${folder}/${file.path}`, bytes: file.bytes };
        throw new Error(`no ${table} part`);
      };
      const questions: Row<'questions'>[] = [];
      const questionsPart = await part('questions');
      for await (const rows of readPart(store, questionsPart.path, questionsPart.bytes, 'questions')) {
        questions.push(...rows);
      }
      const answers = await part('answers');
      const scratchDir = join(out, 'scratch');
      await mkdir(scratchDir);
      const sheet = async (sliceBytes: number) => {
        const prepared = await prepareCurrentWide({
          studyId: study!.id,
          linkId: study!.link_id,
          questions,
          responses: { store, ...(await part('responses')) },
          answers: { store, ...answers },
          attributes: { store, ...(await part('attributes')) },
          csv: { bom: false, escape_formulae: true },
          scratchDir,
          sliceBytes,
        });
        const { records } = await readCsv(prepared.files[0]!.local);
        const [header, ...rows] = records;
        return { header, rows: rows.map((row) => JSON.stringify(row)).sort() };
      };
      const inMemory = await sheet(answers.bytes);
      const bucketed = await sheet(Math.ceil(answers.bytes / 4));
      expect(inMemory.rows).toHaveLength(60);
      expect(bucketed).toEqual(inMemory);
      // The sheet the run itself wrote has the same cells.
      const { records } = await readCsv(
        join(out, 'test', 'current', 'wide', `study_id=${study!.id}`, `${study!.link_id}.csv`),
      );
      expect(records[0]).toEqual(inMemory.header);
      // With the attributes the sandbox's links carry, and each response's status and modality.
      expect(inMemory.header).toEqual(
        expect.arrayContaining(['status', 'modality', 'attribute: utm_source']),
      );
      expect(
        records
          .slice(1)
          .map((row) => JSON.stringify(row))
          .sort(),
      ).toEqual(inMemory.rows);
    });
  });
});
