/**
 * The table declarations every stage reads: keys and references name declared columns, the
 * wide sheet's headers come apart again, and rows sort by key whatever order they came in
 * (their rendering as Markdown: markdown.test.ts).
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

  it('sort a missing key value first, ties by the next key, and in place', () => {
    const row = (study_id: string, position: number | null) =>
      ({ study_id, position }) as unknown as Row<'questions'>;
    const rows = [row('b', 1), row('a', 2), row('a', null), row('a', 1)];
    const sorted = sortByKey('questions', rows);
    expect(sorted).toBe(rows);
    expect(sorted.map((q) => `${q.study_id}/${q.position}`)).toEqual(['a/null', 'a/1', 'a/2', 'b/1']);
  });

  it("declare the wide sheet's fixed columns once each, the coded ones with their codes", () => {
    const keys = wideSheet.fixed.map((column) => column.key);
    const headers = wideSheet.fixed.map((column) => column.header);
    expect(new Set(keys).size).toBe(keys.length);
    expect(new Set(headers).size).toBe(headers.length);
    // Each fixed column but status is a column of responses; status says what the summary means.
    for (const key of keys.filter((key) => key !== 'status')) expect(columnNames('responses')).toContain(key);
    const status = wideSheet.fixed.find((column) => column.key === 'status')!;
    expect('codes' in status && status.codes).toEqual([responseStatus('x'), responseStatus(null)]);
    // No header a respondent's attribute key can make is a fixed column's.
    for (const header of headers) expect(wideAttributeKey(header)).toBeNull();
  });
});
