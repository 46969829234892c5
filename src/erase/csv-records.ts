/**
 * A CSV file of a run without the erased responses' records, filtered as bytes: each record
 * (a line, or several where a quoted cell holds a line break) is found by its line end outside
 * quotes and copied as it is, byte order mark, quoting and formula escapes included, unless
 * its id column holds an erased id. Only a record whose bytes contain an erased id at all is
 * parsed (papaparse) to read that column: a respondent's text that quotes an id keeps its row.
 */
import { PassThrough } from 'node:stream';
import Papa from 'papaparse';
import { copyInto } from '../storage/copy.ts';
import type { Storage } from '../storage/types.ts';

const QUOTE = 0x22;
const LINE_FEED = 0x0a;

/** The cells of one CSV record. */
function cellsOf(record: Buffer): string[] {
  const parsed = Papa.parse<string[]>(record.toString('utf8').replace(/^\ufeff/, ''), { header: false });
  return parsed.data[0] ?? [];
}

/**
 * Splits a stream of CSV bytes into records: `onRecord` gets each one's bytes (its line end
 * included); what a chunk ends with is carried into the next.
 */
class RecordSplitter {
  #carry: Buffer = Buffer.alloc(0);
  /** Whether the carried bytes end inside a quoted cell. */
  #quoted = false;
  /** Where the scan of the carried bytes stopped. */
  #scanned = 0;

  constructor(private readonly onRecord: (record: Buffer) => void) {}

  push(chunk: Buffer): void {
    const bytes = this.#carry.length === 0 ? chunk : Buffer.concat([this.#carry, chunk]);
    let start = 0;
    let at = this.#carry.length === 0 ? 0 : this.#scanned;
    let quoted = this.#quoted;
    while (at < bytes.length) {
      if (quoted) {
        const quote = bytes.indexOf(QUOTE, at);
        if (quote < 0) {
          at = bytes.length;
          break;
        }
        // A doubled quote inside a cell toggles twice: the state comes out the same.
        quoted = false;
        at = quote + 1;
        continue;
      }
      const quote = bytes.indexOf(QUOTE, at);
      const line = bytes.indexOf(LINE_FEED, at);
      if (line >= 0 && (quote < 0 || line < quote)) {
        this.onRecord(bytes.subarray(start, line + 1));
        start = line + 1;
        at = start;
      } else if (quote >= 0) {
        quoted = true;
        at = quote + 1;
      } else {
        at = bytes.length;
      }
    }
    this.#carry = bytes.subarray(start);
    this.#scanned = at - start;
    this.#quoted = quoted;
  }

  end(): void {
    if (this.#carry.length > 0) this.onRecord(this.#carry);
    this.#carry = Buffer.alloc(0);
  }
}

/**
 * Writes `path` of `to` as `path` of `from` without the records whose column `idColumn` (by
 * its header) holds one of `ids`; returns how many records it removed.
 */
export async function filterCsvRecords(
  from: Storage,
  to: Storage,
  path: string,
  idColumn: string,
  ids: ReadonlySet<string>,
): Promise<number> {
  const needles = [...ids].map((id) => Buffer.from(id, 'utf8'));
  const output = new PassThrough();
  const copied = copyInto(output, to, path);
  let column = -1;
  let removed = 0;
  let pending: Buffer[] = [];
  const splitter = new RecordSplitter((record) => {
    if (column < 0) {
      column = cellsOf(record).indexOf(idColumn);
      if (column < 0) throw new Error(`${from.describe(path)}: no column ${idColumn} in its header`);
    } else if (needles.some((needle) => record.includes(needle)) && ids.has(cellsOf(record)[column] ?? '')) {
      removed += 1;
      return;
    }
    pending.push(record);
  });
  try {
    for await (const chunk of await from.readStream(path)) {
      splitter.push(chunk as Buffer);
      if (pending.length > 0) {
        const ready = pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending);
        pending = [];
        if (!output.write(ready)) await new Promise((resolve) => output.once('drain', resolve));
      }
    }
    splitter.end();
    if (pending.length > 0) output.write(Buffer.concat(pending));
    output.end();
  } catch (error) {
    output.destroy(error as Error);
  }
  await copied;
  return removed;
}
