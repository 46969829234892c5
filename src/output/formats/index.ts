/**
 * The registry of output formats: one line per format, in the order they are offered and
 * written. A format is one module (format.ts says what it declares); listing it here is all
 * that makes it part of runs, current/, the codebooks, datapackage.json, verify and the
 * handoffs (docs/architecture.md: how to add a format).
 */
import type { TableName } from '../../tables/index.ts';
import { tablesMarkdown } from '../../tables/markdown.ts';
import { csvFormat } from './csv.ts';
import { dtaFormat } from './dta.ts';
import type { FormatModule, StudyFormatModule, TableFormatModule } from './format.ts';
import { parquetFormat } from './parquet.ts';
import { savFormat } from './sav.ts';
import { wideFormat } from './wide.ts';
import { xlsxFormat } from './xlsx.ts';

export const outputFormats = [
  csvFormat,
  parquetFormat,
  xlsxFormat,
  wideFormat,
  savFormat,
  dtaFormat,
] as const satisfies readonly FormatModule[];

export type {
  FormatModule,
  Holder,
  StudyCopy,
  StudyFileWriter,
  StudyFormatModule,
  StudyRows,
  TableFileWriter,
  TableFormatModule,
} from './format.ts';

type Registered = (typeof outputFormats)[number];

/** A format output.formats and --formats take. */
export type Format = Extract<Registered, { selectable: true }>['name'];
/** A format every table is written in. */
export type TableFormat = Extract<Registered, { kind: 'table' }>['name'];

/** The formats output.formats and --formats take, in the registry's order. */
export const formatNames = outputFormats.flatMap((format) => (format.selectable ? [format.name] : [])) as [
  Format,
  ...Format[],
];

/** The formats output.formats holds when the pipeline file does not say. */
export const defaultFormats = outputFormats.flatMap((format) =>
  format.selectable && 'byDefault' in format && format.byDefault ? [format.name] : [],
) as Format[];

export const tableFormats: readonly TableFormatModule[] = outputFormats.filter(
  (format): format is Extract<Registered, { kind: 'table' }> => format.kind === 'table',
);
export const studyFormats: readonly StudyFormatModule[] = outputFormats.filter(
  (format): format is Extract<Registered, { kind: 'study' }> => format.kind === 'study',
);

/** docs/tables.md, with the table formats' files (npm run docs writes it; a test checks it). */
export function tablesReference(): string {
  return tablesMarkdown(tableFormats.map((format) => format.tableFile('<table>' as TableName)));
}

/** The table formats in the order a reader prefers them: current/'s (typed) first. */
export const tableFormatsToRead: readonly TableFormatModule[] = [...tableFormats].sort(
  (a, b) => Number(b.currentStore) - Number(a.currentStore),
);

/** The table format current/ keeps every part in (its merges read it): the one with currentStore. */
export const storeFormat: TableFormatModule = (() => {
  const stores = tableFormats.filter((format) => format.currentStore);
  if (stores.length !== 1) throw new Error('exactly one table format keeps current/');
  return stores[0] as TableFormatModule;
})();

/** The format a file named `path` is written in, by its extension; undefined for another file. */
export function formatOfFile(path: string): FormatModule | undefined {
  const lower = path.toLowerCase();
  return outputFormats.find((format) =>
    lower.endsWith(format.kind === 'table' ? `.${format.name}` : format.extension),
  );
}

export function isTableFormat(name: string): name is TableFormat {
  return tableFormats.some((format) => format.name === name);
}

/** The registered format of that name; an Error for a name no module declares. */
export function formatNamed(name: string): FormatModule {
  const format = outputFormats.find((candidate) => candidate.name === name);
  if (!format) throw new Error(`no output format named ${name}`);
  return format;
}

/** The table format of that name. */
export function tableFormatNamed(name: TableFormat): TableFormatModule {
  const format = tableFormats.find((candidate) => candidate.name === name);
  if (!format) throw new Error(`no table format named ${name}`);
  return format;
}

/** The format of a table's file in a run (by its name, as the format writes it). */
export function tableFormatOfFile(table: TableName, path: string): TableFormat {
  const format = tableFormats.find((candidate) => candidate.tableFile(table) === path);
  if (!format) throw new Error(`${path}: not a file of table ${table} in any table format`);
  return format.name as TableFormat;
}

/** The table formats among `names`, in the registry's order. */
export function tableFormatsOf(names: readonly string[]): TableFormatModule[] {
  return tableFormats.filter((format) => names.includes(format.name));
}

/** The study formats a run writes for `names`: those named, and those every run writes. */
export function studyFormatsOf(names: readonly string[]): StudyFormatModule[] {
  return studyFormats.filter((format) => !format.selectable || names.includes(format.name));
}
