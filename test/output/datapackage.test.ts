import { describe, expect, it } from 'vitest';
import { dataPackage } from '../../src/output/datapackage.ts';
import { columnNames, type TableName, tableNames, wideHeader } from '../../src/tables/index.ts';

const files = (format: 'csv' | 'parquet') =>
  tableNames.map((table: TableName) => ({
    table,
    path: `${table}.${format}`,
    format,
    bytes: 100,
    sha256: 'ab'.repeat(32),
  }));

const options = {
  name: 'Demo',
  title: 'Demo: a run',
  description: 'A run.',
  created: '2026-11-24T23:50:00.000Z',
};

type Resource = ReturnType<typeof dataPackage>['resources'][number];
type TableResource = Extract<Resource, { table: string; path: unknown }>;

describe('dataPackage', () => {
  const pkg = dataPackage({
    ...options,
    source: { base_url: 'https://studies.example.com/api', sandbox: false },
    tables: [...files('csv'), ...files('parquet')],
    sheets: [
      {
        path: 'wide/Coffee Habits.csv',
        header: wideHeader(['Why?', 'attribute: utm_source']),
        bom: true,
        bytes: 10,
        sha256: 'cd'.repeat(32),
      },
    ],
    files: [
      { path: 'media.zip', bytes: 5, sha256: 'ef'.repeat(32) },
      { path: 'raw/list_responses.jsonl.gz', bytes: 7, sha256: '01'.repeat(32) },
      { path: 'xlsx/Coffee Habits.xlsx', bytes: 9, sha256: '02'.repeat(32) },
      { path: 'manifest.json' },
    ],
  });
  const resources = pkg.resources as unknown as TableResource[];

  it('is a data package with one uniquely named resource per file, saying where the data came from', () => {
    expect(pkg.profile).toBe('data-package');
    expect(pkg).toMatchObject({
      name: 'demo',
      title: 'Demo: a run',
      created: '2026-11-24T23:50:00.000Z',
      sources: [
        {
          title: 'Study Responses service at https://studies.example.com/api',
          path: 'https://studies.example.com/api',
        },
      ],
    });
    expect(pkg).not.toHaveProperty('licenses');
    expect(
      dataPackage({ ...options, source: { base_url: 'sandbox', sandbox: true }, tables: [] }).sources,
    ).toEqual([{ title: expect.stringMatching(/^The sandbox/) }]);
    const names = pkg.resources.map((r) => r.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toContain('answers');
    expect(names).toContain('answers-parquet');
    for (const name of names) expect(name).toMatch(/^[-a-z0-9._/]+$/);
  });

  it('describes the files that are not tables by format and media type, and the wide sheets with a schema', () => {
    const byPath = new Map(
      pkg.resources.map((r) => [(r as { path?: unknown }).path as string, r as Record<string, unknown>]),
    );
    expect(byPath.get('media.zip')).toMatchObject({
      profile: 'data-resource',
      name: 'media.zip',
      format: 'zip',
      mediatype: 'application/zip',
      bytes: 5,
      hash: `sha256:${'ef'.repeat(32)}`,
    });
    expect(byPath.get('manifest.json')).toMatchObject({
      name: 'manifest.json',
      mediatype: 'application/json',
    });
    expect(byPath.get('manifest.json')).not.toHaveProperty('hash');
    expect(byPath.get('raw/list_responses.jsonl.gz')).toMatchObject({ format: 'jsonl', compression: 'gz' });
    expect(byPath.get('xlsx/Coffee Habits.xlsx')).toMatchObject({
      profile: 'data-resource',
      name: expect.stringMatching(/^xlsx\/coffee_habits\.xlsx-[0-9a-f]{8}$/),
      mediatype: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    });
    const sheet = byPath.get('wide/Coffee Habits.csv') as unknown as {
      profile: string;
      encoding: string;
      schema: {
        fields: { name: string; type: string; format?: string; description: string }[];
        primaryKey: string[];
      };
    };
    // With a byte order mark (bom: true): a file, which CSV readers would refuse as a table.
    expect(sheet).toMatchObject({ profile: 'data-resource', encoding: 'utf-8' });
    expect(sheet.schema.fields.map((f) => [f.name, f.type, f.format])).toEqual([
      ['response_id', 'string', undefined],
      ['response_number', 'integer', undefined],
      ['created_at (UTC)', 'datetime', '%Y-%m-%d %H:%M:%S'],
      ['updated_at (UTC)', 'datetime', '%Y-%m-%d %H:%M:%S'],
      ['status', 'string', undefined],
      ['modality', 'string', undefined],
      ['summary', 'string', undefined],
      ['Why?', 'string', undefined],
      ['attribute: utm_source', 'string', undefined],
    ]);
    // Each column says what it holds, from the wide sheet's declaration.
    const descriptions = sheet.schema.fields.map((f) => f.description);
    expect(descriptions[4]).toMatch(/^complete, or in progress/);
    expect(descriptions[7]).toMatch(/^Answer to "Why\?"/);
    expect(descriptions[8]).toMatch(/^The URL parameter "utm_source"/);
    expect(sheet.schema.primaryKey).toEqual(['response_id']);
  });

  it('gives Parquet a data-resource profile (v1 keeps the tabular one for CSV) with its schema', () => {
    const parquet = resources.find((r) => r.name === 'answers-parquet')!;
    expect(parquet.profile).toBe('data-resource');
    expect(resources.find((r) => r.name === 'answers')!.profile).toBe('tabular-data-resource');
    expect(parquet.schema.primaryKey).toEqual(['response_id', 'answer_id']);
  });

  it('describes only the columns the files hold, and keys only where their columns are there', () => {
    const [answers] = dataPackage({
      ...options,
      tables: [
        {
          table: 'answers',
          path: ['answers/study_id=a/part-1.parquet', 'answers/study_id=b/part-1.parquet'],
          format: 'parquet',
          columns: columnNames('answers').filter((name) => name !== 'response_id'),
        },
      ],
    }).resources as unknown as TableResource[];
    expect(answers!.path).toEqual(['answers/study_id=a/part-1.parquet', 'answers/study_id=b/part-1.parquet']);
    expect(answers!.schema.fields.map((f) => f.name)).toEqual(
      columnNames('answers').filter((name) => name !== 'response_id'),
    );
    expect(answers!.schema).not.toHaveProperty('primaryKey');
    expect(answers!.schema).not.toHaveProperty('foreignKeys');
  });

  it('describes fields, types, required constraints and keys from the table declarations', () => {
    const responses = resources.find((r) => r.name === 'responses')!;
    expect(responses).toMatchObject({
      path: 'responses.csv',
      format: 'csv',
      mediatype: 'text/csv',
      encoding: 'utf-8',
      bytes: 100,
      hash: `sha256:${'ab'.repeat(32)}`,
      dialect: { delimiter: ',', lineTerminator: '\r\n', header: true },
    });
    expect(responses.schema.fields.map((f) => f.name)).toEqual(columnNames('responses'));
    const field = (name: string) => responses.schema.fields.find((f) => f.name === name);
    expect(field('created_at')).toMatchObject({
      type: 'datetime',
      format: 'any',
      constraints: { required: true },
    });
    expect(field('updated_at')).toMatchObject({ type: 'datetime', constraints: { required: false } });
    // Text the service may send as "" reads back from CSV as missing: never required.
    expect(field('short_transcript')).toMatchObject({ type: 'string', constraints: { required: false } });
    expect(field('response_id')).toMatchObject({ constraints: { required: true } });
    expect(field('answer_count')).toMatchObject({ type: 'integer' });
    expect(field('extra')).toMatchObject({ type: 'object' });
    expect(field('summary')?.description).toMatch(/Summary/);
    expect(responses.schema.primaryKey).toEqual(['response_id']);
    expect(responses.schema.foreignKeys).toEqual([
      { fields: ['study_id'], reference: { resource: 'studies', fields: ['study_id'] } },
    ]);
  });

  it('points foreign keys at resources of the same format', () => {
    const answers = resources.find((r) => r.name === 'answers-parquet')!;
    expect(answers).toMatchObject({ format: 'parquet', mediatype: 'application/vnd.apache.parquet' });
    expect(answers).not.toHaveProperty('dialect');
    expect(answers.schema.foreignKeys).toEqual([
      { fields: ['response_id'], reference: { resource: 'responses-parquet', fields: ['response_id'] } },
    ]);
    const names = new Set(resources.map((r) => r.name));
    for (const resource of resources.filter((r) => r.table)) {
      for (const key of resource.schema.foreignKeys ?? [])
        expect(names.has(key.reference.resource)).toBe(true);
    }
  });

  it('says which resources are the same table in another format', () => {
    const csv = resources.find((r) => r.name === 'answers')!;
    const parquet = resources.find((r) => r.name === 'answers-parquet')!;
    expect(csv.table).toBe('answers');
    expect(parquet.table).toBe('answers');
    expect(csv.description).toContain('Same rows as "answers-parquet" (parquet)');
    expect(parquet.description).toContain('Same rows as "answers" (csv)');
  });

  it('leaves out foreignKeys where a table has none, and keys every table by columns that are never empty', () => {
    const studies = resources.find((r) => r.name === 'studies')!;
    expect(studies.schema).not.toHaveProperty('foreignKeys');
    // A URL parameter's name is the one key column the service may send as "" (`?=x`).
    const mayBeEmpty = new Set(['attributes.key', 'attributes-parquet.key']);
    for (const resource of resources.filter((r) => r.table)) {
      for (const key of resource.schema.primaryKey ?? []) {
        const field = resource.schema.fields.find((f) => f.name === key);
        expect(field?.constraints.required).toBe(!mayBeEmpty.has(`${resource.name}.${key}`));
      }
    }
    expect(resources.find((r) => r.name === 'questions')?.schema.primaryKey).toEqual([
      'study_id',
      'position',
    ]);
  });

  it("names a table's resources by format alone, whatever the formats of the run", () => {
    const parquetOnly = dataPackage({ ...options, tables: files('parquet') })
      .resources as unknown as TableResource[];
    expect(parquetOnly.map((r) => r.name)).toEqual(tableNames.map((t) => `${t}-parquet`));
    expect(
      parquetOnly.find((r) => r.name === 'media-parquet')?.schema.foreignKeys?.[0]?.reference.resource,
    ).toBe('responses-parquet');
  });
});
