/** The tables reference as Markdown, rendered from the declarations in index.ts. */
import { type Column, runTableNames, type TableName, tables, wideSheet } from './index.ts';

export const typeNames = {
  string: 'string',
  integer: 'integer',
  boolean: 'boolean',
  timestamp: 'timestamp (UTC)',
  json: 'JSON text',
} as const;

/**
 * `tableFiles`: a table's file in each table format (src/output/formats/, above this room),
 * e.g. `<table>.csv`.
 */
export function tablesMarkdown(tableFiles: readonly string[]): string {
  const parts = [
    '# Tables',
    '',
    '<!-- Generated from src/tables/index.ts by `npm run docs`; do not edit by hand. -->',
    '',
    `Every table is written as ${tableFiles.map((file) => `\`${file}\``).join(' and/or ')} (output.formats). In CSV an empty`,
    'cell is a missing value, booleans are `true` or `false`, and timestamps are ISO 8601 UTC',
    '(`2025-03-12T18:18:53.934Z`, with six digits where the service sent microseconds); in Parquet',
    'nullable columns are OPTIONAL, timestamps are UTC TIMESTAMP(MICROS) and integers INT64. The same',
    "facts are in each run's datapackage.json.",
    '',
  ];
  for (const name of runTableNames) parts.push(...tableSection(name));
  parts.push(...wideSheetSection());
  parts.push(...statisticsSection());
  return `${parts.join('\n')}\n`;
}

/** The wide sheets' columns, as tableSection renders a table's: from wideSheet's declaration. */
export function wideSheetSection(level = 2): string[] {
  const items = [
    ...wideSheet.fixed.map(
      (column) => `\`${column.header}\` (${typeNames[column.type]}): ${column.description}`,
    ),
    "*question text* (string): one column per question slot, in questions.position order, headed by the question's text (with `[<discussion_guide_question_id> / <concept_id>]` when two slots share a text). " +
      wideSheet.questionDescription('*question text*'),
    `\`${wideSheet.attributePrefix}<key>\` (string): after the questions, one column per attribute key of the study's responses, by key. ${wideSheet.attributeDescription('*key*')} At most ${wideSheet.maxAttributeColumns}: the keys most responses carry (the warning \`wide_attributes_left_out\` says how many others only the attributes table holds).`,
  ];
  return [
    `${'#'.repeat(level)} wide sheets`,
    '',
    ...wrap(
      `${wideSheet.description} \`wide/<link_id>.csv\` and a workbook's sheet \`wide\` hold the same columns, in this order. In the CSV every text cell is quoted and times are \`2026-11-21 23:55:00\` (UTC, to the second); in the workbook they are date cells.`,
    ),
    '',
    ...items.flatMap((item) => wrap(`- ${item}`, '  ')),
    '',
  ];
}

/** The SPSS and Stata files' variables: the wide sheet's columns, named and typed for them. */
export function statisticsSection(level = 2): string[] {
  const kind = (column: (typeof wideSheet.fixed)[number]) => {
    if ('codes' in column) return `code: ${column.codes.map((label, i) => `${i + 1} ${label}`).join(', ')}`;
    if (column.type === 'timestamp') return 'time: SPSS DATETIME20, Stata %tc, UTC to the second';
    return column.type === 'integer' ? 'number' : 'text';
  };
  const items = [
    ...wideSheet.fixed.map((column) => `\`${column.key}\` (${kind(column)}): ${column.description}`),
    "`q_<discussion_guide_question_id>` or `q_<discussion_guide_question_id>__<concept_id>` (text): one variable per question slot, in the wide sheet's order, labelled with the question's text, holding the answer; `-` in an id becomes `_`. Ids of other characters, or a name past 32 characters, give what can be kept of the ids and six hex digits of a hash of them. A slot keeps its name in every run, whatever its position or wording.",
    '`a_<key>` (text): one variable per attribute column of the wide sheet, named as the question slots are.',
  ];
  return [
    `${'#'.repeat(level)} SPSS and Stata files`,
    '',
    ...wrap(
      "`sav/<link_id>.sav` and `dta/<link_id>.dta` (with `sav` or `dta` among output.formats) hold a study's wide sheet: one row per response, in the same order, one variable per column, each labelled with the column's description or question (Stata: 80 characters, the whole text in the variable's notes). Names are at most 32 characters of letters, digits and `_`, unique ignoring case. Unanswered is the empty string; a missing number, time or code is system-missing (SPSS) or `.` (Stata). In a .sav, a text longer than 32,766 bytes continues in `<name>_2`, `<name>_3` and so on. The codebook (README.md) of each run, of current/ and of a `share` package lists every study's variables with their slots and questions.",
    ),
    '',
    ...items.flatMap((item) => wrap(`- ${item}`, '  ')),
    '',
  ];
}

/** `text` in lines of at most 100 characters (a terminal's width), broken between words. */
function wrap(text: string, indent = ''): string[] {
  const lines: string[] = [];
  let line = '';
  // A code span stays on one line.
  const words = text.split(' ').reduce<string[]>((joined, word) => {
    const last = joined.at(-1);
    if (last !== undefined && (last.split('`').length - 1) % 2 === 1)
      joined[joined.length - 1] = `${last} ${word}`;
    else joined.push(word);
    return joined;
  }, []);
  for (const word of words) {
    if (line && line.length + 1 + word.length > 100) {
      lines.push(line);
      line = indent + word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
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
