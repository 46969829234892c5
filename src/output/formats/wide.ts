/**
 * The wide sheet of one study: wide/<link_id>.csv, one row per response, one column per
 * question slot and per attribute key, in response_number order. Those columns are only known
 * once the whole study has streamed, and responses arrive in any order (the service states
 * none, and details finish out of order), so rows are spilled to the run's scratch folder in
 * sorted runs and merged into the CSV at the end; memory stays bounded however many responses
 * the study has.
 */
import { createHash } from 'node:crypto';
import { type WideColumn, type WideRow, wideValue } from '../../records.ts';
import type { Storage } from '../../storage/types.ts';
import { wideHeader, wideSheet } from '../../tables/index.ts';
import { createSortedSpill, type SortedSpill } from '../sorted-spill.ts';
import {
  type CsvCell,
  type CsvOptions,
  type CsvWriter,
  createCsvWriter,
  csvText,
  textAsWritten,
} from './csv.ts';
import { type StudyFormatModule, wholeText } from './format.ts';

const batchSize = 1000;

/** A short name for a sheet's files in scratch, whatever the length of the sheet's name. */
export function scratchName(name: string): string {
  return createHash('sha256').update(name).digest('hex').slice(0, 16);
}

type WideOrderKey = readonly [number | null, string];

/** The order of a wide sheet's rows: by response_number, then (and without one, last) by response_id. */
export function compareWideOrder(a: WideOrderKey, b: WideOrderKey): number {
  const [na, ida] = a;
  const [nb, idb] = b;
  if (na !== nb) {
    if (na === null) return 1;
    if (nb === null) return -1;
    return na - nb;
  }
  return ida < idb ? -1 : ida > idb ? 1 : 0;
}

/** Wide rows spilled in sheet order to `scratchDir` under `name`. */
export function wideRowSpill(scratchDir: string, name: string, runBytes?: number): SortedSpill<WideRow> {
  return createSortedSpill<WideRow, WideOrderKey>({
    dir: scratchDir,
    name,
    keyOf: (row) => [row.response_number, row.response_id],
    compare: compareWideOrder,
    runBytes,
  });
}

/** A wide sheet as written: its path, and its header as the file holds it (formulae escaped). */
export interface WrittenWideSheet {
  path: string;
  header: string[];
}

export interface WideWriter {
  add(row: WideRow): Promise<void>;
  /** Writes wide/<name>.csv with the given question and attribute columns. */
  finish(columns: readonly WideColumn[]): Promise<WrittenWideSheet>;
  abort(): Promise<void>;
}

/**
 * The sheet goes to `storage`, and the same text to `alsoTo` when given (the study's current
 * sheet, when it is new to the current dataset); its spill to `scratchDir`, a local folder of
 * the run's own.
 */
export function createWideWriter(
  storage: Storage,
  scratchDir: string,
  /** The sheet's name (src/names.ts): its link_id's, or its study's in a run (studyFileName). */
  name: string,
  options: CsvOptions & { alsoTo?: Pick<Storage, 'create' | 'describe'> },
): WideWriter {
  const csvPath = studyFileOf(name);
  const spill = wideRowSpill(scratchDir, `wide-${scratchName(name)}`);
  const sheets: CsvWriter[] = [];

  return {
    add: (row) => spill.add(row),
    async finish(columns) {
      const header = wideHeader(columns.map((c) => c.header));
      const sheetOptions = { ...options, quoteText: true };
      for (const target of options.alsoTo ? [storage, options.alsoTo] : [storage]) {
        sheets.push(await createCsvWriter(target, csvPath, header, sheetOptions));
      }
      await copyRows(spill.sorted(), sheets, columns, sheetOptions);
      for (const sheet of sheets) await sheet.close();
      return { path: csvPath, header: header.map((text) => textAsWritten(text, options)) };
    },
    async abort() {
      await spill.remove();
      for (const sheet of sheets) await sheet.abort();
    },
  };
}

async function copyRows(
  rows: AsyncIterable<WideRow>,
  sheets: readonly CsvWriter[],
  columns: readonly WideColumn[],
  options: CsvOptions & { quoteText: boolean },
): Promise<void> {
  let batch: CsvCell[][] = [];
  const flush = async () => {
    const text = csvText(batch, options);
    // Encoded once for two sheets, rather than by each.
    const chunk = sheets.length > 1 ? Buffer.from(text, 'utf8') : text;
    for (const sheet of sheets) await sheet.writeText(chunk);
    batch = [];
  };
  for await (const row of rows) {
    batch.push(wideRecord(row, columns));
    if (batch.length >= batchSize) await flush();
  }
  await flush();
}

function wideRecord(row: WideRow, columns: readonly WideColumn[]): CsvCell[] {
  return [
    ...wideSheet.fixed.map((column) => {
      const value = row[column.key];
      return column.type === 'timestamp' && typeof value === 'string' ? spreadsheetTime(value) : value;
    }),
    ...columns.map((column) => wideValue(row, column)),
  ];
}

const isoTime = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.\d+)?Z$/;

/**
 * A UTC ISO 8601 timestamp as a spreadsheet's import takes for a date and time,
 * "2025-03-12 18:18:53" (Calc and Excel leave "2025-03-12T18:18:53.934Z" as text); anything
 * else as it is.
 */
export function spreadsheetTime(iso: string): string {
  const match = isoTime.exec(iso);
  return match ? `${match[1]} ${match[2]}` : iso;
}

const studyFileOf = (fileName: string): string => `wide/${fileName}.csv`;

/**
 * The wide sheet, wide/<link_id>.csv: every run writes it, whatever output.formats says. A run
 * writes it with createWideWriter, which can copy its bytes to the study's current/ sheet.
 */
export const wideFormat = {
  name: 'wide',
  kind: 'study',
  selectable: false,
  help: 'one row per response, one column per question (always written)',
  datapackage: { format: 'csv', mediatype: 'text/csv' },
  codebookRank: 1,
  folder: 'wide',
  extension: '.csv',
  fileNoun: 'wide sheet',
  description: 'One row per response, one column per question and attribute.',
  studyFile: studyFileOf,
  texts: wholeText,
  codebookLine: (holder) =>
    `- **${holder !== 'current' ? 'wide/<link_id>.csv' : 'wide/study_id=<id>/<link_id>.csv'}** (spreadsheet): one row per response with its status and modality, one column per question, then one per attribute (URL parameter); opens in Excel, LibreOffice, Numbers.`,
  // Its bytes and sha256 are checked as every file's; a CSV has no structure to check beyond.
  verifyFile: async () => [],
  open(input) {
    const writer = createWideWriter(input.storage, input.scratchDir, input.fileName, input.csv);
    return {
      add: (rows) => writer.add(rows.wide),
      finish: (columns) => writer.finish(columns),
      abort: () => writer.abort(),
    };
  },
} as const satisfies StudyFormatModule;
