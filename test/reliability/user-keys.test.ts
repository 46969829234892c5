/**
 * Keys the respondent or the service names are data: URL parameters called `__proto__`,
 * `constructor` or `toString`, a question text `__proto__` in the answers object, an extra
 * field `__proto__` on a list item. JSON.parse keeps them as own properties; each must reach
 * attributes, answers and `extra` in CSV, Parquet and current/, and pollute nothing.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { validateDataPackage } from '../helpers/frictionless.ts';
import { duckdb, readCsv, readHyparquet } from '../helpers/readers.ts';
import { cliPipeline } from '../helpers/run-files.ts';

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 91, studies: 1, responses: 3 });
});
afterAll(async () => {
  await sandbox.close();
});

const attributes = JSON.parse(
  '{"__proto__":"from a link","constructor":"ctor","toString":"ts","hasOwnProperty":"own","id":"p-1"}',
) as Record<string, string>;
const answers = JSON.parse(
  '{"Summary":"a summary","__proto__":"answer to __proto__","constructor":"answer to constructor"}',
) as Record<string, string>;

it('__proto__, constructor and toString survive as data in attributes, answers and extra, in every format and in current/', async () => {
  await withTempDir(async (dir) => {
    const [study] = sandbox.studies();
    const link = study!.link_id;
    const [withAttributes, withAnswers] = sandbox.responses(link);
    sandbox.mutateListItem(link, withAttributes!.id, (item) => {
      // Spread keeps an own "__proto__" as an own property (CopyDataProperties).
      const extra = JSON.parse('{"__proto__":{"polluted":"yes"}}') as Record<string, unknown>;
      return { ...item, ...extra, attributes };
    });
    sandbox.mutateListItem(link, withAnswers!.id, (item) => {
      const { answers_array: _dropped, ...rest } = item;
      return { ...rest, answers };
    });
    const { out, run } = await cliPipeline(sandbox, dir, 'test', { formats: ['csv', 'parquet', 'xlsx'] });
    const { runDir, ...cli } = await run();
    expect(cli.code, cli.stderr).toBe(0);
    // The Frictionless reader casts the attributes CSV, "__proto__" row included.
    const frictionless = await validateDataPackage(runDir);
    expect(frictionless.errors).toEqual([]);
    // Nothing reached Object.prototype in this process either (the sandbox served the payloads).
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();

    const expected = Object.entries(attributes).sort();
    const sortedPairs = (rows: Record<string, unknown>[]) =>
      rows
        .filter((row) => row.response_id === withAttributes!.id)
        .map((row) => [row.key, row.value])
        .sort();
    expect(sortedPairs(await readHyparquet(join(runDir, 'attributes.parquet')))).toEqual(expected);
    const csv = await readCsv(join(runDir, 'attributes.csv'));
    const [header, ...records] = csv.records;
    const asRows = records.map((record) => Object.fromEntries(header!.map((name, i) => [name, record[i]])));
    expect(sortedPairs(asRows)).toEqual(expected);
    const current = join(out, 'test', 'current');
    for (const glob of [join(runDir, 'attributes.parquet'), join(current, 'attributes', '*', '*.parquet')]) {
      const rows = await duckdb((query) =>
        query(
          `select response_id, key, value from read_parquet('${glob}', hive_partitioning = ${glob.includes('*')}) where response_id = '${withAttributes!.id}'`,
        ),
      );
      expect(sortedPairs(rows), glob).toEqual(expected);
    }

    // The answers object's keys are answer ids when answers_array is absent.
    const answerRows = await duckdb((query) =>
      query(
        `select answer_id, answer from read_parquet('${join(current, 'answers', '*', '*.parquet')}', hive_partitioning = true) where response_id = '${withAnswers!.id}' order by position`,
      ),
    );
    expect(answerRows).toEqual([
      { answer_id: '__proto__', answer: 'answer to __proto__' },
      { answer_id: 'constructor', answer: 'answer to constructor' },
    ]);

    // An extra field named __proto__ is kept in `extra` as JSON.
    const responses = await readHyparquet(join(runDir, 'responses.parquet'));
    const extra = responses.find((row) => row.response_id === withAttributes!.id)?.extra as string;
    expect(Object.entries(JSON.parse(extra) as object)).toEqual([['__proto__', { polluted: 'yes' }]]);

    expect((await verifyRun(runDir)).problems).toEqual([]);
  });
});
