import { describe, expect, it } from 'vitest';
import { dataPackage } from '../../src/load/datapackage.ts';
import { columnNames, type TableName, tableNames } from '../../src/load/tables.ts';

const files = (format: 'csv' | 'parquet') =>
  tableNames.map((table: TableName) => ({
    table,
    path: `${table}.${format}`,
    format,
    bytes: 100,
    sha256: 'ab'.repeat(32),
  }));

describe('dataPackage', () => {
  const pkg = dataPackage({
    name: 'Demo',
    formats: ['csv', 'parquet'],
    resources: [...files('csv'), ...files('parquet')],
  });

  it('is a tabular data package with one uniquely named resource per file', () => {
    expect(pkg.profile).toBe('tabular-data-package');
    expect(pkg.name).toBe('demo');
    const names = pkg.resources.map((r) => r.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toContain('answers');
    expect(names).toContain('answers-parquet');
  });

  it('describes fields, types, required constraints and keys from the table declarations', () => {
    const responses = pkg.resources.find((r) => r.name === 'responses')!;
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
      format: '%Y-%m-%dT%H:%M:%S.%fZ',
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
    const answers = pkg.resources.find((r) => r.name === 'answers-parquet')!;
    expect(answers).toMatchObject({ format: 'parquet', mediatype: 'application/vnd.apache.parquet' });
    expect(answers).not.toHaveProperty('dialect');
    expect(answers.schema.foreignKeys).toEqual([
      { fields: ['response_id'], reference: { resource: 'responses-parquet', fields: ['response_id'] } },
    ]);
    const names = new Set(pkg.resources.map((r) => r.name));
    for (const resource of pkg.resources) {
      for (const key of resource.schema.foreignKeys ?? [])
        expect(names.has(key.reference.resource)).toBe(true);
    }
  });

  it('says which resources are the same table in another format', () => {
    const csv = pkg.resources.find((r) => r.name === 'answers')!;
    const parquet = pkg.resources.find((r) => r.name === 'answers-parquet')!;
    expect(csv.table).toBe('answers');
    expect(parquet.table).toBe('answers');
    expect(csv.description).toContain('Same rows as "answers-parquet" (parquet)');
    expect(parquet.description).toContain('Same rows as "answers" (csv)');
  });

  it('leaves out foreignKeys where a table has none, and keys every table by columns that are never empty', () => {
    const studies = pkg.resources.find((r) => r.name === 'studies')!;
    expect(studies.schema).not.toHaveProperty('foreignKeys');
    // A URL parameter's name is the one key column the service may send as "" (`?=x`).
    const mayBeEmpty = new Set(['attributes.key', 'attributes-parquet.key']);
    for (const resource of pkg.resources) {
      for (const key of resource.schema.primaryKey) {
        const field = resource.schema.fields.find((f) => f.name === key);
        expect(field?.constraints.required).toBe(!mayBeEmpty.has(`${resource.name}.${key}`));
      }
    }
    expect(pkg.resources.find((r) => r.name === 'questions')?.schema.primaryKey).toEqual([
      'study_id',
      'position',
    ]);
  });

  it('gives the first listed format the bare names', () => {
    const parquetOnly = dataPackage({ name: 'x', formats: ['parquet'], resources: files('parquet') });
    expect(parquetOnly.resources.map((r) => r.name)).toEqual(tableNames);
    expect(
      parquetOnly.resources.find((r) => r.name === 'media')?.schema.foreignKeys?.[0]?.reference.resource,
    ).toBe('responses');
  });
});
