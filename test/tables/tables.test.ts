/**
 * The table declarations every stage reads: keys and references name declared columns, the
 * wide sheet's headers come apart again, and rows sort by key whatever order they came in.
 */
import { describe, expect, it } from 'vitest';
import {
  columnNames,
  type Row,
  responseStatus,
  runTableNames,
  sortByKey,
  type TableName,
  tableNames,
  tables,
  wideAttributeKey,
  wideColumnDescription,
  wideHeader,
  wideSheet,
} from '../../src/tables/index.ts';
import { tableSection, tablesMarkdown } from '../../src/tables/markdown.ts';

describe('the table declarations', () => {
  it('name every key and reference by a declared column of a declared table', () => {
    for (const name of runTableNames) {
      const columns = columnNames(name);
      expect(new Set(columns).size).toBe(columns.length);
      for (const key of tables[name].primaryKey) expect(columns).toContain(key);
      for (const reference of tables[name].foreignKeys) {
        for (const field of reference.fields) expect(columns).toContain(field);
        const target = reference.reference.resource as TableName;
        expect(runTableNames).toContain(target);
        for (const field of reference.reference.fields) expect(columnNames(target)).toContain(field);
      }
    }
    // The data tables are the run's tables but the record of deletions.
    expect(runTableNames.filter((name) => !(tableNames as string[]).includes(name))).toEqual(['deletions']);
  });

  it('give the wide sheet its fixed columns first, and tell attribute columns from questions', () => {
    const header = wideHeader(['How was it?', `${wideSheet.attributePrefix}utm_source`]);
    expect(header.slice(0, wideSheet.fixed.length)).toEqual(wideSheet.fixed.map((column) => column.header));
    expect(wideAttributeKey(header.at(-1) as string)).toBe('utm_source');
    expect(wideAttributeKey('How was it?')).toBeNull();
    expect(wideColumnDescription('How was it?')).toContain('"How was it?"');
    expect(wideColumnDescription(`${wideSheet.attributePrefix}utm_source`)).toContain(
      'URL parameter "utm_source"',
    );
    expect(responseStatus(null)).toBe('in progress');
    expect(responseStatus('')).toBe('in progress');
    expect(responseStatus('A summary.')).toBe('complete');
  });

  it('sort rows by their key, numbers as numbers', () => {
    const row = (response_id: string, key: string) => ({ response_id, key, study_id: 's', value: 'v' });
    const rows = [row('b', 'x'), row('a', 'y'), row('a', 'x')] as Row<'attributes'>[];
    expect(sortByKey('attributes', rows).map((r) => `${r.response_id}/${r.key}`)).toEqual([
      'a/x',
      'a/y',
      'b/x',
    ]);
    const questions = [10, 9, 1].map(
      (position) => ({ study_id: 's', position }) as unknown as Row<'questions'>,
    );
    expect(sortByKey('questions', questions).map((q) => q.position)).toEqual([1, 9, 10]);
  });

  it('render each table as a Markdown section with every column, and the formats the caller names', () => {
    const section = tableSection('answers').join('\n');
    for (const column of columnNames('answers')) expect(section).toContain(`\n| ${column} | `);
    const reference = tablesMarkdown(['<table>.csv', '<table>.parquet']);
    expect(reference).toContain('Every table is written as `<table>.csv` and/or `<table>.parquet`');
    expect(reference).not.toContain('<table>.xlsx');
  });
});
