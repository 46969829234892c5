/**
 * The Excel workbook of one study: xlsx/<name>.xlsx (src/names.ts studyFileName) with the sheets
 * About (the study, the export time, that times are UTC, what each sheet and column is: from the
 * declarations), wide (one row per response, one column per question slot), answers and
 * transcript. The workbook writer
 * wants one sheet after another, but a study's rows arrive response by response and the wide
 * sheet's columns are known only at the end, so rows are spilled to JSONL files in the run's
 * scratch folder and the workbook is written from them when the study is done.
 */
import { createReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';
import { type WideColumn, type WideRow, wideValue } from '../../records.ts';
import { copyInto } from '../../storage/copy.ts';
import { openLocalFile } from '../../storage/local-file.ts';
import type { OutputFile, Storage } from '../../storage/types.ts';
import { type TableName, tables, wideColumnDescription, wideSheet } from '../../tables/index.ts';
import { bufferedZipEntries, zipEntryNames } from '../codecs/zip-reader.ts';
import type { StudyFormatModule, StudyRows } from './format.ts';
import { scratchName, spreadsheetTime, wideRowSpill } from './wide.ts';
import type { CutCell, SheetColumn, SheetSource, SheetValue, WorkbookProperties } from './xlsx-workbook.ts';

export const XLSX_DIR = 'xlsx';

/** The parts every workbook has (About, wide, answers, transcript, in this order). */
const workbookParts = ['xl/workbook.xml', ...[1, 2, 3, 4].map((n) => `xl/worksheets/sheet${n}.xml`)];

export type { StudyRows };

export interface XlsxWriter {
  add(rows: StudyRows): Promise<void>;
  /** Writes the workbook with the wide sheet's question columns; returns its path in the storage. */
  finish(columns: readonly WideColumn[]): Promise<string>;
  abort(): Promise<void>;
}

type Spilled = 'answers' | 'transcript';
const spilled: readonly Spilled[] = ['answers', 'transcript'];

/** A cell cut to Excel's limit, in the workbook `file` (relative to the run directory). */
export type CutReport = CutCell & { file: string };

/** The manifest warning for a cut cell: where it is, and where the full text is. */
export function cutMessage(cut: CutReport): string {
  return `${cut.file}: sheet ${cut.sheet}, row ${cut.row} (${cut.what}), column "${cut.column}": ${cut.length} characters cut to Excel's cell limit of 32,767; the full text is in the CSV and Parquet tables`;
}

/** The study a workbook is of, as its About sheet and properties name it. */
export interface WorkbookStudy {
  id: string;
  link_id: string;
  title: string;
}

/** The workbook goes to `storage` as it is written; its spills to `scratchDir` (local). */
export function createXlsxWriter(
  storage: Storage,
  scratchDir: string,
  study: WorkbookStudy,
  /** The workbook's name (src/names.ts studyFileName), as its wide sheet's. */
  name: string,
  onCut: (cut: CutReport) => void,
): XlsxWriter {
  const file = studyFileOf(name);
  const spill = `xlsx-${scratchName(name)}`;
  const spillPath = (sheet: Spilled) => join(scratchDir, `${spill}.${sheet}.jsonl`);
  const wide = wideRowSpill(scratchDir, `${spill}.wide`);
  let spills: Map<Spilled, OutputFile> | null = null;
  // Adds are chained so concurrent callers keep whole lines.
  let queue: Promise<void> = Promise.resolve();

  const open = async (): Promise<Map<Spilled, OutputFile>> => {
    if (!spills) {
      await mkdir(scratchDir, { recursive: true });
      spills = new Map();
      for (const sheet of spilled) spills.set(sheet, await openLocalFile(spillPath(sheet)));
    }
    return spills;
  };
  const removeSpills = () => Promise.all(spilled.map((sheet) => rm(spillPath(sheet), { force: true })));

  return {
    add(rows) {
      queue = queue.then(async () => {
        const sinks = await open();
        await wide.add(rows.wide);
        for (const table of ['answers', 'transcript'] as const) {
          const lines = rows[table].map((row) => `${JSON.stringify(row)}\n`).join('');
          if (lines) await sinks.get(table)?.write(lines);
        }
      });
      return queue;
    },
    async finish(columns) {
      await queue;
      for (const sink of (await open()).values()) await sink.close();
      // The workbook's bytes are copied into the storage as exceljs writes them.
      const output = new PassThrough();
      const copied = copyInto(output, storage, file);
      copied.catch(() => {}); // awaited below; a failure also ends the workbook's writes
      try {
        // exceljs is loaded only by runs that write workbooks: it is most of start-up otherwise.
        const { writeWorkbook } = await import('./xlsx-workbook.ts');
        const exportedAt = new Date();
        await writeWorkbook(
          output,
          [
            aboutSheet(study, exportedAt, columns),
            ...sheetsOf(wide.sorted(), (table) => linesOf(spillPath(table)), columns),
          ],
          (cut) => onCut({ ...cut, file }),
          workbookProperties(study, exportedAt),
        );
        if (!output.writableEnded) output.end();
      } catch (error) {
        output.destroy(error as Error);
        await copied.catch(() => {});
        throw error;
      }
      await copied;
      await removeSpills();
      return file;
    },
    async abort() {
      await queue.catch(() => {});
      for (const sink of spills?.values() ?? []) await sink.abort();
      await removeSpills();
      await wide.remove();
      await storage.delete(file);
    },
  };
}

/** The document properties: the study's title, and its link_id and id. */
export function workbookProperties(study: WorkbookStudy, exportedAt: Date): WorkbookProperties {
  return {
    title: study.title,
    subject: `Responses of study ${study.link_id} (${study.id})`,
    keywords: study.link_id,
    description: `Exported by study-export on ${spreadsheetTime(exportedAt.toISOString())} UTC. Times in this workbook are UTC.`,
    created: exportedAt,
  };
}

/**
 * The About sheet: the study, the export time, that times are UTC, then each sheet and each
 * of its columns with its description, from the table declarations (tables.ts).
 */
export function aboutSheet(
  study: WorkbookStudy,
  exportedAt: Date,
  columns: readonly WideColumn[],
): SheetSource {
  const rows: SheetValue[][] = [
    ['Study', study.title],
    ['link_id', study.link_id],
    ['study_id', study.id],
    ['Exported (UTC)', exportedAt.toISOString()],
    [
      'Times',
      'Every time in this workbook is UTC (Coordinated Universal Time), not local time, to the second (the CSV and Parquet tables keep milliseconds).',
    ],
    ['Written by', 'study-export'],
    [null, null],
    ['Sheet / column', 'What it is'],
    [wideSheet.name, wideSheet.description],
    ...wideSheet.fixed.map((column) => [`  ${column.header}`, column.description]),
    ...columns.map((column) => [`  ${column.header}`, wideColumnDescription(column.header)]),
    ...workbookTables.flatMap((table) => [
      [table, tables[table].description],
      ...tables[table].columns.map((column) => [`  ${column.name}`, column.description]),
    ]),
  ];
  const exportedRow = rows.findIndex((row) => row[0] === 'Exported (UTC)');
  return {
    name: 'About',
    table: false,
    columns: [
      // Both columns on a printed page's width: the first for names, the second for what they are.
      { header: 'Sheet / column', kind: 'text', width: 36 },
      { header: 'What it is', kind: 'text', width: 80 },
    ],
    // The export time is a date cell; every other value of the second column is text.
    rows: (async function* () {
      for (const row of rows) yield row;
    })(),
    describeRow: (values) => String(values[0]),
    cellKind: (row, column) => (row === exportedRow && column === 1 ? 'timestamp' : undefined),
  };
}

/**
 * Text columns of the wide sheet that hold a word or a short value, narrower than answers, so
 * that a page printed one page wide keeps a readable scale.
 */
const shortTextWidths: Record<string, number> = { status: 11, modality: 10, attribute: 20 };

/** The tables that have a sheet of their own in a workbook, after the wide sheet. */
export const workbookTables = ['answers', 'transcript'] as const satisfies readonly TableName[];

/** The data sheets: wide, then answers and transcript from `rowsOf` (rows as the tables hold them). */
export function sheetsOf(
  wideRows: AsyncIterable<WideRow>,
  rowsOf: (table: (typeof workbookTables)[number]) => AsyncIterable<Record<string, unknown>>,
  columns: readonly WideColumn[],
): SheetSource[] {
  return [
    {
      name: wideSheet.name,
      columns: [
        ...wideSheet.fixed.map(
          (column): SheetColumn => ({
            header: column.header,
            kind: column.key === 'response_id' ? 'id' : column.type === 'string' ? 'text' : column.type,
            ...(column.key in shortTextWidths ? { width: shortTextWidths[column.key] } : {}),
          }),
        ),
        ...columns.map(
          (column): SheetColumn => ({
            header: column.header,
            kind: 'text',
            ...(column.of === 'attribute' ? { width: shortTextWidths.attribute } : {}),
          }),
        ),
      ],
      rows: mapRows(wideRows, (row) => [
        ...wideSheet.fixed.map((column) => row[column.key]),
        ...columns.map((column) => wideValue(row, column)),
      ]),
      describeRow: (values) => `response ${values[0]}`,
    },
    ...workbookTables.map((table) => tableSheet(table, rowsOf(table))),
  ];
}

/** A sheet with a table's columns, in declaration order, typed by the declaration. */
function tableSheet(table: TableName, rows: AsyncIterable<Record<string, unknown>>): SheetSource {
  const declared = tables[table].columns;
  return {
    name: table,
    columns: declared.map((column) => ({
      header: column.name,
      kind:
        column.type === 'integer' || column.type === 'timestamp' || column.type === 'boolean'
          ? column.type
          : column.name.endsWith('_id')
            ? 'id'
            : 'text',
    })),
    rows: mapRows(rows, (row) => declared.map((column) => (row[column.name] ?? null) as SheetValue)),
    describeRow: (values) => `response ${values[0]}`,
  };
}

async function* linesOf(path: string): AsyncIterable<Record<string, unknown>> {
  const lines = createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Infinity });
  for await (const line of lines) if (line !== '') yield JSON.parse(line) as Record<string, unknown>;
}

async function* mapRows<T>(
  rows: AsyncIterable<T>,
  toValues: (row: T) => SheetValue[],
): AsyncIterable<SheetValue[]> {
  for await (const row of rows) yield toValues(row);
}

const studyFileOf = (fileName: string): string => `${XLSX_DIR}/${fileName}.xlsx`;

export const xlsxFormat = {
  name: 'xlsx',
  kind: 'study',
  selectable: true,
  help: 'one workbook per study',
  datapackage: {
    format: 'xlsx',
    mediatype: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  },
  codebookRank: 2,
  folder: XLSX_DIR,
  extension: '.xlsx',
  fileNoun: 'workbook',
  description: 'The workbook of one study: sheets About, wide, answers and transcript (times UTC).',
  studyFile: studyFileOf,
  async texts(bytes) {
    const parts = await bufferedZipEntries(bytes, (name) => /\.(xml|rels)$/i.test(name));
    return parts.map((part) => ({ part: part.name, text: part.data.toString('utf8') }));
  },
  codebookLine: (holder) =>
    `- **${holder !== 'current' ? 'xlsx/<link_id>.xlsx' : 'xlsx/study_id=<id>/<link_id>.xlsx'}** (spreadsheet): per study, sheets About (what each sheet and column is; times are UTC), wide, answers and transcript.`,
  async verifyFile(storage, path, bytes) {
    try {
      const names = await zipEntryNames(storage, path, bytes);
      const missing = workbookParts.filter((part) => !names.includes(part));
      return missing.length > 0 ? [`${path}: not a study workbook (no ${missing.join(', ')})`] : [];
    } catch (error) {
      return [`${path}: cannot be read (${(error as Error).message})`];
    }
  },
  open(input) {
    const writer = createXlsxWriter(input.storage, input.scratchDir, input.study, input.fileName, (cut) =>
      input.warn('xlsx_cell_cut', cutMessage(cut)),
    );
    return {
      add: (rows) => writer.add(rows),
      finish: async (columns) => ({ path: await writer.finish(columns) }),
      abort: () => writer.abort(),
    };
  },
} as const satisfies StudyFormatModule;

/**
 * Whether `formats` asks for workbooks: current/ then keeps each study's whole workbook beside
 * its wide sheet, written from the same sheets as a run's (current/wide.ts).
 */
export function wantsWorkbooks(formats: readonly string[]): boolean {
  return formats.includes(xlsxFormat.name);
}
