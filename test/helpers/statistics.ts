/**
 * Readers of SPSS and Stata files this project did not write: ReadStat's command line
 * (`readstat`), PSPP (`pspp-convert` for the cases, `pspp` for the dictionary), R's haven
 * (read_sav, read_dta) and, for a .dta's variable notes, R's readstata13. Each returns what it read in one shape, so tests compare value by value.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Papa from 'papaparse';
import { formulaPattern } from '../../src/output/formats/csv.ts';

const run = promisify(execFile);
const big = { maxBuffer: 1024 * 1024 * 1024, encoding: 'utf8' as const };

/** Rows as a reader's CSV gives them: a header, then every value as text. */
export interface CsvRead {
  header: string[];
  rows: Record<string, string>[];
}

function parseCsv(text: string): CsvRead {
  const parsed = Papa.parse<string[]>(text, { skipEmptyLines: true });
  const [header = [], ...records] = parsed.data;
  return {
    header,
    rows: records.map((r) => Object.fromEntries(header.map((name, i) => [name, r[i] ?? '']))),
  };
}

/** `readstat FILE -`: the values as CSV (SPSS times as seconds since 1582, Stata's as text). */
export async function readstatRows(path: string): Promise<CsvRead> {
  return parseCsv((await run('readstat', [path, '-'], big)).stdout);
}

/** `readstat FILE`: the file's metadata as its lines say it ("Table label: …"). */
export async function readstatMetadata(path: string): Promise<Record<string, string>> {
  const { stdout } = await run('readstat', [path], big);
  return Object.fromEntries(
    stdout
      .split('\n')
      .filter((line) => line.includes(': '))
      .map((line) => [line.slice(0, line.indexOf(': ')), line.slice(line.indexOf(': ') + 2)]),
  );
}

/** `pspp-convert FILE out.csv`: the cases (times as "MM/DD/YYYY hh:mm:ss", missing numbers as " "). */
export async function psppRows(path: string): Promise<CsvRead> {
  const dir = await mkdtemp(join(tmpdir(), 'pspp-'));
  try {
    await run('pspp-convert', [path, join(dir, 'out.csv')], big);
    return parseCsv(await readFile(join(dir, 'out.csv'), 'utf8'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** PSPP's dictionary of a .sav: each variable's label, formats and measure; value labels by variable. */
export interface PsppDictionary {
  variables: Record<string, { label: string; measure: string; format: string }>;
  valueLabels: Record<string, Record<string, string>>;
  fileLabel: string;
}

export async function psppDictionary(path: string): Promise<PsppDictionary> {
  const dir = await mkdtemp(join(tmpdir(), 'pspp-'));
  try {
    const syntax = join(dir, 'read.sps');
    await writeFile(
      syntax,
      `GET FILE='${path.replaceAll("'", "''")}'.\nDISPLAY DICTIONARY.\nSYSFILE INFO FILE='${path.replaceAll("'", "''")}'.\n`,
    );
    await run('pspp', ['-o', join(dir, 'out.csv'), syntax], big);
    return parseDictionary(await readFile(join(dir, 'out.csv'), 'utf8'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function parseDictionary(text: string): PsppDictionary {
  const tables = text.split(/\n(?=Table: )/);
  const table = (title: string) => {
    const found = tables.find((t) => t.startsWith(`Table: ${title}\n`));
    return found
      ? (Papa.parse<string[]>(found.slice(found.indexOf('\n') + 1), { skipEmptyLines: true }).data ?? [])
      : [];
  };
  const variables: PsppDictionary['variables'] = {};
  const [head = [], ...rows] = table('Variables');
  const at = (name: string) => head.indexOf(name);
  for (const row of rows) {
    variables[row[0]!] = {
      label: row[at('Label')] ?? '',
      measure: row[at('Measurement Level')] ?? '',
      format: row[at('Print Format')] ?? '',
    };
  }
  // PSPP heads a variable's value labels with its label (its name when it has none).
  const byLabel = new Map(Object.entries(variables).map(([name, v]) => [v.label || name, name]));
  const valueLabels: PsppDictionary['valueLabels'] = {};
  let current = '';
  for (const row of table('Value Labels').slice(1)) {
    if (row[0]) current = byLabel.get(row[0]) ?? row[0];
    valueLabels[current] = { ...valueLabels[current], [row[1]!]: row[2]! };
  }
  const info = table('File Information');
  const fileLabel = info.find((row) => row[0] === 'Label')?.[1] ?? '';
  return { variables, valueLabels, fileLabel };
}

/** A column as haven reads it: its values (times as ISO 8601 UTC), label, class and value labels. */
export interface HavenColumn {
  class: string[];
  label: string | null;
  values: (string | number | null)[];
  labels: Record<string, number> | null;
}

export interface HavenRead {
  label: string | null;
  notes: string[] | null;
  columns: Record<string, HavenColumn>;
}

const havenScript = `
library(haven); library(jsonlite)
args <- commandArgs(trailingOnly = TRUE)
d <- if (grepl("[.]sav$", args[1])) read_sav(args[1]) else read_dta(args[1])
column <- function(x) {
  values <- if (inherits(x, "POSIXct")) format(x, "%Y-%m-%dT%H:%M:%SZ", tz = "UTC") else as.vector(unclass(x))
  labels <- attr(x, "labels")
  list(class = I(class(x)), label = attr(x, "label"), values = I(values),
       labels = if (is.null(labels)) NULL else as.list(setNames(as.numeric(labels), names(labels))))
}
out <- list(label = attr(d, "label"), notes = attr(d, "notes"), columns = lapply(d, column))
writeLines(toJSON(out, auto_unbox = TRUE, null = "null", na = "null", digits = NA), args[2], useBytes = TRUE)
`;

/** R's haven: read_sav for .sav, read_dta for .dta. */
export async function havenRead(path: string): Promise<HavenRead> {
  const dir = await mkdtemp(join(tmpdir(), 'haven-'));
  try {
    const out = join(dir, 'out.json');
    await run('Rscript', ['-e', havenScript, path, out], big);
    return JSON.parse(await readFile(out, 'utf8')) as HavenRead;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const characteristicsScript = `
library(readstata13); library(jsonlite)
args <- commandArgs(trailingOnly = TRUE)
d <- read.dta13(args[1], convert.factors = FALSE, generate.factors = FALSE)
fields <- attr(d, "expansion.fields")
writeLines(toJSON(if (is.null(fields)) list() else fields), args[2], useBytes = TRUE)
`;

/**
 * R's readstata13 (read.dta13): a .dta's characteristics as [owner, name, text], Stata's notes
 * among them (`<variable>` or `_dta`, `note0` their number, `note1`… each note). ReadStat and
 * haven read only the dataset's notes, PSPP no Stata file.
 */
export async function readstata13Characteristics(path: string): Promise<[string, string, string][]> {
  const dir = await mkdtemp(join(tmpdir(), 'readstata13-'));
  try {
    const out = join(dir, 'out.json');
    await run('Rscript', ['-e', characteristicsScript, path, out], big);
    return JSON.parse(await readFile(out, 'utf8')) as [string, string, string][];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Seconds from 1582-10-14 (SPSS's epoch) to 1970-01-01. */
const SPSS_EPOCH_SECONDS = 12_219_379_200;

/** A time as the tests compare them: ISO 8601 to the second, UTC. */
export const isoSecond = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** "MM/DD/YYYY hh:mm:ss" (PSPP's CSV, ReadStat's CSV of a Stata %tc) as ISO 8601. */
export function isoFromUsTime(text: string): string | null {
  const match = /^(\d{2})\/(\d{2})\/(\d{4}) (\d{2}:\d{2}:\d{2})$/.exec(text.trim());
  return match ? `${match[3]}-${match[1]}-${match[2]}T${match[4]}Z` : null;
}

/** Seconds since 1582 (ReadStat's CSV of an SPSS DATETIME) as ISO 8601. */
export function isoFromSpssSeconds(text: string): string | null {
  return text.trim() === '' ? null : isoSecond((Number(text) - SPSS_EPOCH_SECONDS) * 1000);
}

/** A number in a reader's CSV: empty or "." is missing. */
export function numberFrom(text: string): number | null {
  const trimmed = text.trim();
  return trimmed === '' || trimmed === '.' ? null : Number(trimmed);
}

/** Milliseconds from 1960-01-01 (Stata's epoch) to 1970-01-01. */
const STATA_EPOCH_MS = 315_619_200_000;

/** A Stata %tc value in ReadStat's CSV (milliseconds since 1960 for a %tc with a display pattern). */
export function isoFromStataMs(text: string): string | null {
  return text.trim() === '' ? null : isoSecond(Number(text) - STATA_EPOCH_MS);
}

/** What a variable is, as the comparison needs it (the dataset's declaration). */
export type DeclaredVariable =
  | { kind: 'text' | 'integer' | 'time'; name: string }
  | { kind: 'coded'; name: string; labels: readonly { code: number; label: string }[] };

/** The readers this project did not write. */
export type StatisticsReader = 'readstat' | 'haven' | 'pspp';

/** Each reader's values, variable by variable, as the wide sheet's CSV writes them. */
export type AsSheet = Record<string, Map<string, string[]>>;

/** A time as the wide sheet writes it: "2025-03-12 18:18:53". */
const sheetTime = (iso: string | null) => (iso === null ? '' : iso.replace('T', ' ').replace(/Z$/, ''));

function sheetValue(
  variable: DeclaredVariable,
  value: string | number | null,
  time: (v: string) => string | null,
) {
  if (value === null || value === '') return '';
  switch (variable.kind) {
    case 'text':
      return String(value);
    case 'time':
      return sheetTime(typeof value === 'number' ? isoSecond(value) : time(value));
    case 'coded': {
      const code = typeof value === 'number' ? value : numberFrom(value);
      return code === null ? '' : (variable.labels.find((l) => l.code === code)?.label ?? `?${value}`);
    }
    case 'integer': {
      const number = typeof value === 'number' ? value : numberFrom(value);
      return number === null ? '' : String(number);
    }
  }
}

/** A variable's columns in a file: itself, then its parts (`<name>_2`, … in a .sav) where present. */
function partsOf(name: string, header: readonly string[], names: ReadonlySet<string>): string[] {
  const parts = [name];
  for (let k = 2; header.includes(`${name}_${k}`) && !names.has(`${name}_${k}`); k++)
    parts.push(`${name}_${k}`);
  return parts;
}

/**
 * A .sav or .dta read by every reader that reads it (ReadStat and haven; PSPP too for a .sav),
 * each variable's values written as the wide sheet writes them (times "YYYY-MM-DD hh:mm:ss",
 * codes as their labels, missing as empty), a text's parts joined.
 */
export async function statisticsAsSheet(
  path: string,
  variables: readonly DeclaredVariable[],
  readers: readonly StatisticsReader[] = ['readstat', 'haven', 'pspp'],
): Promise<AsSheet> {
  const names = new Set(variables.map((v) => v.name));
  const sav = path.endsWith('.sav');
  const fromCsv = (read: CsvRead, time: (v: string) => string | null) =>
    new Map(
      variables.map((v) => {
        const parts = partsOf(v.name, read.header, names);
        return [
          v.name,
          read.rows.map((row) => {
            const joined = parts.map((p) => row[p] ?? '').join('');
            return sheetValue(v, v.kind === 'text' ? joined : (row[v.name] ?? ''), time);
          }),
        ];
      }),
    );
  const result: AsSheet = {};
  if (readers.includes('readstat'))
    result['readstat'] = fromCsv(await readstatRows(path), (v) =>
      sav ? isoFromSpssSeconds(v) : (isoFromUsTime(v) ?? isoFromStataMs(v)),
    );
  if (readers.includes('haven')) result['haven'] = havenAsSheet(await havenRead(path), variables);
  if (sav && readers.includes('pspp')) result['pspp'] = fromCsv(await psppRows(path), isoFromUsTime);
  return result;
}

function havenAsSheet(haven: HavenRead, variables: readonly DeclaredVariable[]): Map<string, string[]> {
  const names = new Set(variables.map((v) => v.name));
  const havenHeader = Object.keys(haven.columns);
  return new Map(
    variables.map((v) => {
      const parts = partsOf(v.name, havenHeader, names).map((p) => haven.columns[p]!.values);
      return [
        v.name,
        parts[0]!.map((_, r) =>
          v.kind === 'text'
            ? parts.map((p) => p[r] ?? '').join('')
            : sheetValue(v, parts[0]![r] ?? null, (text) => text),
        ),
      ];
    }),
  );
}

/** The variables of a study's files, as haven reads its .dta (one variable per column, no parts). */
export async function declaredVariables(
  dta: string,
): Promise<{ variables: DeclaredVariable[]; labels: Record<string, string | null> }> {
  const read = await havenRead(dta);
  const variables = Object.entries(read.columns).map(([name, column]): DeclaredVariable => {
    if (column.labels)
      return {
        kind: 'coded',
        name,
        labels: Object.entries(column.labels).map(([label, code]) => ({ code, label })),
      };
    if (column.class.includes('POSIXct')) return { kind: 'time', name };
    return { kind: name === 'response_number' ? 'integer' : 'text', name };
  });
  return {
    variables,
    labels: Object.fromEntries(Object.entries(read.columns).map(([n, c]) => [n, c.label])),
  };
}

/**
 * Where the readers' values of a .sav or .dta differ from its wide sheet's CSV (`sheet`: header,
 * then rows), variable by variable: "<reader> <variable> row <n>: …". None: every value agrees.
 */
export async function sheetDisagreements(
  file: string,
  sheet: readonly string[][],
  variables: readonly DeclaredVariable[],
  options: { readers?: readonly StatisticsReader[]; escapeFormulae?: boolean } = {},
): Promise<string[]> {
  const [header = [], ...rows] = sheet;
  if (header.length !== variables.length)
    return [`${file}: ${variables.length} variables for the sheet's ${header.length} columns`];
  const problems: string[] = [];
  const short = (text: string | undefined) =>
    text === undefined ? 'nothing' : JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
  // The sheet's cells as its CSV writer wrote them: formula-like text escaped, when it was.
  const asWritten = (value: string | undefined) =>
    value !== undefined && options.escapeFormulae && formulaPattern.test(value) ? `'${value}` : value;
  const read = await statisticsAsSheet(file, variables, options.readers);
  for (const [reader, columns] of Object.entries(read)) {
    variables.forEach((variable, c) => {
      const values = (columns.get(variable.name) ?? []).map(asWritten);
      if (values.length !== rows.length)
        problems.push(`${reader} ${variable.name}: ${values.length} values for ${rows.length} rows`);
      rows.forEach((row, r) => {
        // PSPP's CSV writer ends every line in a value with \n.
        const expected = reader === 'pspp' ? (row[c] ?? '').replaceAll('\r\n', '\n') : (row[c] ?? '');
        if (values[r] !== expected)
          problems.push(
            `${reader} ${variable.name} row ${r + 1}: read ${short(values[r])}, sheet ${short(expected)}`,
          );
      });
    });
  }
  return problems;
}
