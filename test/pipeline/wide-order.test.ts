/**
 * Wide sheets follow response_number whatever order the responses arrive in (the service
 * states no listing order, and details finish out of order): a sandbox study listed in an
 * order unrelated to its response numbers, read back from the run's wide CSV, its workbook
 * (SheetJS) and the current/ wide sheet.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import XLSX from 'xlsx';
import { wideFolder } from '../../src/current/index.ts';
import { nameOf } from '../../src/names.ts';
import { compareWideOrder } from '../../src/output/formats/wide.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readCsv, readHyparquet } from '../helpers/readers.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';
import { workbookProblems } from '../helpers/workbook.ts';

let sandbox: Sandbox;
const RESPONSES = 40;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 23, studies: 2, responses: RESPONSES });
  // Listed by created_at, numbered in a scrambled order: 17 × i mod 41 is a permutation of 1..40.
  // Every 5th item of the sandbox lists no response_number at all; it stays without one.
  for (const study of sandbox.studies()) {
    sandbox.responses(study.link_id).forEach((listed, i) => {
      sandbox.mutateListItem(study.link_id, listed.id, (item) =>
        'response_number' in item ? { ...item, response_number: ((17 * (i + 1)) % 41) * 3 } : item,
      );
    });
  }
});
afterAll(async () => {
  await sandbox.close();
});

type Key = readonly [number | null, string];
const keyOf = (row: string[]): Key => [row[1] === '' ? null : Number(row[1]), row[0]!];

describe('wide sheets', () => {
  it('are ordered by response_number, then response_id, in the CSV, the workbook and current/', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, {
        source: { per_page: 7, concurrency: 6 },
        output: { formats: ['csv', 'parquet', 'xlsx'] },
      });
      const { runDir } = await runAgainst(sandbox, config);
      const responses = await readHyparquet(join(runDir!, 'responses.parquet'));
      for (const study of sandbox.studies()) {
        const name = nameOf(study.link_id);
        const arrived = responses
          .filter((r) => r.study_id === study.id)
          .map(
            (r): Key => [
              r.response_number === null ? null : Number(r.response_number),
              String(r.response_id),
            ],
          );
        expect(arrived).toHaveLength(RESPONSES);
        const expected = [...arrived].sort(compareWideOrder);
        // The responses table keeps the order of arrival, which is not the sheet's order.
        expect(arrived).not.toEqual(expected);
        expect(expected.filter(([n]) => n === null).length).toBe(RESPONSES / 5);

        const [, ...rows] = (await readCsv(join(runDir!, 'wide', `${name}.csv`))).records;
        expect(rows.map(keyOf)).toEqual(expected);

        const book = XLSX.read(await readFile(join(runDir!, 'xlsx', `${name}.xlsx`)));
        const sheet = XLSX.utils.sheet_to_json<unknown[]>(book.Sheets.wide!, { header: 1, defval: null });
        expect(sheet.slice(1).map((row): Key => [row[1] as number | null, row[0] as string])).toEqual(
          expected,
        );

        const current = join(out, 'test', wideFolder(study.id), `${name}.csv`);
        const [, ...currentRows] = (await readCsv(current)).records;
        expect(currentRows.map(keyOf)).toEqual(expected);
      }
      expect((await workbookProblems(runDir!, sandbox.studies(), { escapeFormulae: true })).problems).toEqual(
        [],
      );
    });
  });
});
