/** The tables reference as Markdown, rendered from the declarations in index.ts. */
import { type Column, type TableName, tableNames, tables } from './index.ts';

export const typeNames = {
  string: 'string',
  integer: 'integer',
  boolean: 'boolean',
  timestamp: 'timestamp (UTC)',
  json: 'JSON text',
} as const;

export function tablesMarkdown(): string {
  const parts = [
    '# Tables',
    '',
    '<!-- Generated from src/tables/index.ts by `npm run docs`; do not edit by hand. -->',
    '',
    'Every table is written as `<table>.csv` and/or `<table>.parquet` (output.formats). In CSV an empty',
    'cell is a missing value, booleans are `true` or `false`, and timestamps are ISO 8601 UTC',
    '(`2025-03-12T18:18:53.934Z`, with six digits where the service sent microseconds); in Parquet',
    'nullable columns are OPTIONAL, timestamps are UTC TIMESTAMP(MICROS) and integers INT64. The same',
    "facts are in each run's datapackage.json.",
    '',
  ];
  for (const name of tableNames) parts.push(...tableSection(name));
  return `${parts.join('\n')}\n`;
}

/** One table's reference: description, key, references and every column; `level` of its heading. */
export function tableSection(name: TableName, level = 2): string[] {
  const table = tables[name];
  const keys = table.primaryKey as readonly string[];
  const lines = [
    `${'#'.repeat(level)} ${name}`,
    '',
    table.description,
    '',
    `Key: ${keys.map((k) => `\`${k}\``).join(', ')}.`,
  ];
  for (const fk of table.foreignKeys) {
    lines.push(`References ${fk.reference.resource} (${fk.fields.map((f) => `\`${f}\``).join(', ')}).`);
  }
  lines.push('', '| column | type | required | meaning |', '|---|---|---|---|');
  for (const column of table.columns) {
    lines.push(
      `| ${column.name} | ${typeNames[column.type]} | ${required(column)} | ${column.description.replace(/\|/g, '\\|')} |`,
    );
  }
  lines.push('');
  return lines;
}

/** "yes" when a value is always there; text the service may send as "" says so. */
function required(column: Column): string {
  if (column.nullable) return '';
  return column.canBeEmpty ? 'yes (may be "")' : 'yes';
}
