/**
 * The tables reference rendered from the declarations (docs/tables.md, and each codebook's
 * sections): every table with its key, references and each column's type and whether it is
 * required; the wide sheet's columns and the SPSS and Stata variables from wideSheet; every
 * line within a terminal's 100 columns, a code span never broken across lines.
 */
import { describe, expect, it } from 'vitest';
import { columnNames, runTableNames, tables, wideSheet } from '../../src/tables/index.ts';
import {
  statisticsSection,
  tableSection,
  tablesMarkdown,
  typeNames,
  wideSheetSection,
} from '../../src/tables/markdown.ts';

/** Lines wider than 100 columns, or that open a code span they do not close. */
function badLines(lines: readonly string[]): string[] {
  return lines.filter((line) => [...line].length > 100 || (line.split('`').length - 1) % 2 === 1);
}

describe('a table section', () => {
  it('gives the key, each reference and a row per column with its type and whether it is required', () => {
    for (const name of runTableNames) {
      const lines = tableSection(name);
      expect(lines[0]).toBe(`## ${name}`);
      expect(lines).toContain(tables[name].description);
      const keys = tables[name].primaryKey as readonly string[];
      expect(lines).toContain(`Key: ${keys.map((key) => `\`${key}\``).join(', ')}.`);
      for (const reference of tables[name].foreignKeys)
        expect(lines).toContain(
          `References ${reference.reference.resource} (${reference.fields.map((f) => `\`${f}\``).join(', ')}).`,
        );
      const rows = lines.filter((line) => line.startsWith('| ') && !line.startsWith('| column '));
      expect(rows.map((row) => row.split(' | ')[0]!.slice(2))).toEqual(columnNames(name));
      for (const [index, column] of tables[name].columns.entries()) {
        const [, type, required] = rows[index]!.split(' | ');
        expect(type, `${name}.${column.name}`).toBe(typeNames[column.type]);
        const expected = column.nullable ? '' : column.canBeEmpty ? 'yes (may be "")' : 'yes';
        expect(required, `${name}.${column.name}`).toBe(expected);
      }
    }
  });

  it('says which columns may be missing, empty or must be there', () => {
    const rows = tableSection('responses').filter((line) => line.startsWith('| '));
    const required = (column: string) => rows.find((row) => row.startsWith(`| ${column} |`))!.split(' | ')[2];
    expect(required('response_id')).toBe('yes');
    expect(required('updated_at')).toBe('');
    expect(tableSection('answers', 3)[0]).toBe('### answers');
  });
});

describe('the wide sheet and statistics sections', () => {
  it('list every fixed column of the wide sheet with its header and type, then questions and attributes', () => {
    const lines = wideSheetSection(3);
    expect(lines[0]).toBe('### wide sheets');
    const text = lines.join(' ').replace(/ {2,}/g, ' ');
    for (const column of wideSheet.fixed)
      expect(text).toContain(`- \`${column.header}\` (${typeNames[column.type]}): ${column.description}`);
    expect(text).toContain(`\`${wideSheet.attributePrefix}<key>\` (string)`);
    expect(text).toContain(`At most ${wideSheet.maxAttributeColumns}:`);
    expect(badLines(lines)).toEqual([]);
  });

  it('number each coded column from 1, and say how times and numbers are kept', () => {
    const lines = statisticsSection();
    expect(lines[0]).toBe('## SPSS and Stata files');
    const text = lines.join(' ').replace(/ {2,}/g, ' ');
    expect(text).toContain('`status` (code: 1 complete, 2 in progress)');
    expect(text).toContain('`modality` (code: 1 text, 2 audio, 3 video)');
    expect(text).toContain('`created_at` (time: SPSS DATETIME20, Stata %tc, UTC to the second)');
    expect(text).toContain('`response_number` (number)');
    expect(text).toContain('`summary` (text)');
    expect(badLines(lines)).toEqual([]);
  });
});

describe('the tables reference', () => {
  it('names the files it is given, then every table, the wide sheets and the statistics files, in order', () => {
    const reference = tablesMarkdown(['<table>.csv', '<table>.parquet']);
    expect(reference).toContain('Every table is written as `<table>.csv` and/or `<table>.parquet`');
    expect(reference).not.toContain('<table>.xlsx');
    expect(tablesMarkdown(['<table>.csv'])).toContain(
      'Every table is written as `<table>.csv` (output.formats)',
    );
    const headings = reference.split('\n').filter((line) => line.startsWith('## '));
    expect(headings).toEqual([
      ...runTableNames.map((name) => `## ${name}`),
      '## wide sheets',
      '## SPSS and Stata files',
    ]);
    expect(reference.endsWith('\n')).toBe(true);
    const prose = reference.split('\n').filter((line) => !line.startsWith('|'));
    expect(badLines(prose)).toEqual([]);
  });
});
