/**
 * The wide sheet of one study: wide/<link_id>.csv, one row per response, one column per
 * question slot. The question columns are only known once the whole study has streamed,
 * so rows are spilled to a JSONL file in the run's scratch folder and the CSV is written
 * from it at the end; memory stays flat however many responses the study has.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { type WideColumn, type WideRow, wideFixedColumns } from '../records.ts';
import { openLocalFile } from '../storage/local-file.ts';
import type { OutputFile, Storage } from '../storage/types.ts';
import { type CsvCell, type CsvOptions, type CsvWriter, createCsvWriter } from './csv.ts';

const maxNameLength = 100;
const reservedNames = /^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$/i;
const batchSize = 1000;

/**
 * A file name (without extension) for any string: letters, digits, ".", "_" and "-" only,
 * no leading dot (so never "." or ".."), at most 100 characters and 200 UTF-8 bytes before
 * the suffix. A name that had to change gets a short hash of the original, so two different
 * link ids never share a file.
 */
export function safeFileName(s: string): string {
  // Cut by code points (a UTF-16 cut can split a surrogate pair, which reaches the disk as
  // U+FFFD) and to 200 UTF-8 bytes, so the name and its suffix stay under 255 bytes.
  const chars = Array.from(
    s
      .normalize('NFC')
      .replace(/[^\p{L}\p{N}._-]/gu, '_')
      .replace(/^\.+/, (dots) => '_'.repeat(dots.length)),
  ).slice(0, maxNameLength);
  while (Buffer.byteLength(chars.join('')) > 200) chars.pop();
  const cleaned = chars.join('');
  if (cleaned === s && cleaned.length > 0 && !reservedNames.test(cleaned)) return cleaned;
  const hash = createHash('sha256').update(s).digest('hex').slice(0, 8);
  return `${cleaned || '_'}-${hash}`;
}

export interface WideWriter {
  add(row: WideRow): Promise<void>;
  /** Writes wide/<safe link_id>.csv with the given question columns; returns its path in the storage. */
  finish(columns: readonly WideColumn[]): Promise<string>;
  abort(): Promise<void>;
}

/** The sheet goes to `storage`; its spill to `scratchDir`, a local folder of the run's own. */
export function createWideWriter(
  storage: Storage,
  scratchDir: string,
  linkId: string,
  options: CsvOptions,
): WideWriter {
  const name = safeFileName(linkId);
  const csvPath = `wide/${name}.csv`;
  const spillPath = join(scratchDir, `wide-${name}.spill.jsonl`);
  let spill: OutputFile | null = null;
  let csv: CsvWriter | null = null;
  // Adds are chained so concurrent callers keep whole lines.
  let queue: Promise<void> = Promise.resolve();

  const openSpill = async (): Promise<OutputFile> => {
    spill ??= await openLocalFile(spillPath);
    return spill;
  };

  return {
    add(row) {
      queue = queue.then(async () => (await openSpill()).write(`${JSON.stringify(row)}\n`));
      return queue;
    },
    async finish(columns) {
      await queue;
      const sink = await openSpill();
      await sink.close();
      csv = await createCsvWriter(
        storage,
        csvPath,
        [...wideFixedColumns, ...columns.map((c) => c.header)],
        options,
      );
      await copyRows(spillPath, csv, columns);
      await csv.close();
      await rm(spillPath, { force: true });
      return csvPath;
    },
    async abort() {
      await queue.catch(() => {});
      await spill?.abort();
      await csv?.abort();
    },
  };
}

async function copyRows(spillPath: string, csv: CsvWriter, columns: readonly WideColumn[]): Promise<void> {
  const lines = createInterface({ input: createReadStream(spillPath, 'utf8'), crlfDelay: Infinity });
  let batch: CsvCell[][] = [];
  for await (const line of lines) {
    if (line === '') continue;
    batch.push(wideRecord(JSON.parse(line) as WideRow, columns));
    if (batch.length >= batchSize) {
      await csv.write(batch);
      batch = [];
    }
  }
  await csv.write(batch);
}

export function wideRecord(row: WideRow, columns: readonly WideColumn[]): CsvCell[] {
  return [
    row.response_id,
    row.response_number,
    row.created_at,
    row.updated_at,
    row.summary,
    ...columns.map((column) => row.cells[column.key] ?? null),
  ];
}
