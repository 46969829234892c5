/**
 * csv.bom and the Frictionless reference reader for JavaScript (`datapackage`, `tableschema`):
 * it reads every table CSV of a run and of current/ with its schema, value by value, since
 * those never carry a byte order mark; it cannot read a CSV that starts with one, whatever its
 * quoting, which is why a wide sheet with a mark is described as a file with its schema
 * (docs/opening-files.md). The bytes after the mark are read with that schema, value by value.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csvDialect, formulaPattern } from '../../src/output/formats/csv.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import {
  responseStatus,
  type TableName,
  tableNames,
  tables,
  wideAttributeKey,
} from '../../src/tables/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readTabular, readWithDescriptor, validateDataPackage } from '../helpers/frictionless.ts';
import { readHyparquet } from '../helpers/readers.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 8, studies: 2, responses: 10 });
});
afterAll(async () => {
  await sandbox.close();
});

const bom = Buffer.from([0xef, 0xbb, 0xbf]);

/** A CSV cell without the formula escape (csv.escape_formulae), as Parquet holds it. */
const unescaped = (value: unknown) =>
  typeof value === 'string' && value.startsWith("'") && formulaPattern.test(value.slice(1))
    ? value.slice(1)
    : value;

/** A value as the reader casts it, for comparison with Parquet's: ISO times, parsed JSON, no escape. */
function fromReader(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  return unescaped(value) ?? null;
}

function fromParquet(table: TableName, column: string, value: unknown): unknown {
  const type = tables[table].columns.find((c) => c.name === column)?.type;
  if (value === null || value === undefined || value === '') return null;
  if (type === 'timestamp') return new Date(value as Date).toISOString();
  if (type === 'integer') return Number(value);
  if (type === 'json') return JSON.parse(String(value));
  return value;
}

const keyOf = (table: TableName, row: Record<string, unknown>) =>
  JSON.stringify(tables[table].primaryKey.map((name) => row[name]));

describe('csv.bom and the Frictionless reference reader', () => {
  it('refuses a byte order mark before a header, quoted or not; reads the same file without it', async () => {
    await withTempDir(async (dir) => {
      const descriptor = {
        profile: 'tabular-data-resource',
        name: 'sheet',
        format: 'csv',
        mediatype: 'text/csv',
        encoding: 'utf-8',
        dialect: csvDialect,
        schema: {
          fields: [
            { name: 'response_id', type: 'string' },
            { name: 'n', type: 'integer' },
          ],
        },
      };
      const body = '"a",1\r\n';
      await writeFile(join(dir, 'quoted.csv'), `\ufeff"response_id","n"\r\n${body}`);
      await writeFile(join(dir, 'unquoted.csv'), `\ufeffresponse_id,n\r\n${body}`);
      await writeFile(join(dir, 'plain.csv'), `"response_id","n"\r\n${body}`);
      // Its CSV parser (csv-parse) is made without its `bom` option, and the descriptor's dialect
      // cannot pass one: the mark is a character of the first field.
      await expect(readWithDescriptor(descriptor, dir, 'quoted.csv')).rejects.toThrow(
        'Data source parsing error',
      );
      const [unquoted] = await readWithDescriptor(descriptor, dir, 'unquoted.csv');
      expect(unquoted).toBeInstanceOf(Error);
      expect((unquoted as { headerNames: string[] }).headerNames).toEqual(['\ufeffresponse_id', 'n']);
      expect(await readWithDescriptor(descriptor, dir, 'plain.csv')).toEqual([{ response_id: 'a', n: 1 }]);
    });
  });

  it('with csv.bom: true reads every CSV of a run and of current/ with its schema, value by value', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, {
        output: { formats: ['csv', 'parquet'], csv: { bom: true, escape_formulae: true } },
      });
      const runDir = (await runAgainst(sandbox, config)).runDir!;
      const current = join(out, 'test', 'current');
      for (const dir of [runDir, current]) expect((await validateDataPackage(dir)).errors).toEqual([]);

      // The tables: cast by the reader as their schema says, equal to the Parquet tables.
      const fromRun = await readTabular(runDir);
      const fromCurrent = await readTabular(current);
      const parquet = new Map<TableName, Record<string, unknown>[]>();
      for (const table of tableNames) {
        const rows = (await readHyparquet(join(runDir, `${table}.parquet`))).map((row) =>
          Object.fromEntries(
            tables[table].columns.map((c) => [c.name, fromParquet(table, c.name, row[c.name])]),
          ),
        );
        parquet.set(table, rows);
        const expected = [...rows].sort((a, b) => (keyOf(table, a) < keyOf(table, b) ? -1 : 1));
        for (const [where, read] of [
          ['run', fromRun],
          ['current/', fromCurrent],
        ] as const) {
          const cast = (read.get(table) ?? []) as Record<string, unknown>[];
          expect(cast.filter((row) => row instanceof Error)).toEqual([]);
          const values = cast
            .map((row) =>
              Object.fromEntries(Object.entries(row).map(([name, value]) => [name, fromReader(value)])),
            )
            .sort((a, b) => (keyOf(table, a) < keyOf(table, b) ? -1 : 1));
          expect(values, `${table} in ${where}`).toEqual(expected);
        }
      }
      expect(parquet.get('attributes')!.length).toBeGreaterThan(0);

      // The wide sheets: each starts with the mark; after it, its schema reads every row.
      const responses = new Map(parquet.get('responses')!.map((row) => [row.response_id, row]));
      const attributes = new Map(
        parquet.get('attributes')!.map((row) => [`${row.response_id} ${row.key}`, row.value ?? null]),
      );
      let sheets = 0;
      for (const dir of [runDir, current]) {
        const pkg = JSON.parse(await readFile(join(dir, 'datapackage.json'), 'utf8')) as {
          resources: { path: string; profile: string; schema?: { fields: { name: string }[] } }[];
        };
        for (const sheet of pkg.resources.filter((r) => String(r.path).startsWith('wide/'))) {
          sheets++;
          expect(sheet.profile).toBe('data-resource');
          const bytes = await readFile(join(dir, sheet.path));
          expect(bytes.subarray(0, 3)).toEqual(bom);
          await writeFile(join(out, 'sheet.csv'), bytes.subarray(3));
          const rows = (await readWithDescriptor(
            { ...sheet, profile: 'tabular-data-resource' },
            out,
            'sheet.csv',
          )) as Record<string, unknown>[];
          expect(rows.filter((row) => row instanceof Error)).toEqual([]);
          expect(rows.length).toBeGreaterThan(0);
          const keys = (sheet.schema?.fields ?? []).flatMap((f) => {
            const key = wideAttributeKey(f.name);
            return key === null ? [] : [[f.name, key] as const];
          });
          expect(keys.length).toBeGreaterThan(0);
          for (const row of rows) {
            const response = responses.get(row.response_id);
            expect(response, `${sheet.path} ${row.response_id}`).toBeDefined();
            expect(row.response_number).toBe(response!.response_number);
            expect(row.status).toBe(responseStatus((response!.summary as string | null) ?? null));
            expect(row.modality).toBe(response!.modality);
            expect(fromReader(row.summary)).toBe(response!.summary);
            for (const [header, key] of keys)
              expect(fromReader(row[header]), `${sheet.path} ${header}`).toBe(
                attributes.get(`${row.response_id} ${key}`) ?? null,
              );
          }
        }
      }
      expect(sheets).toBe(2 * sandbox.studies().length);
    });
  });
});
