/**
 * An SPSS system file (.sav), written from PSPP's documentation of the format ("System File
 * Format" in the PSPP developers' guide): the header, the variable records, value labels,
 * the extension records (machine integer and floating-point info, display parameters, long
 * variable names, very long strings, the character encoding: UTF-8), and the cases with
 * simple bytecode compression, so a text column's padding costs one byte per 8.
 *
 * The case count, every string's width and the parts of a text past 32,767 bytes are known
 * before the first case (from `Measure`), so cases are encoded one at a time and memory stays
 * flat in the number of cases.
 */
import { Bytes } from '../labelled/bytes.ts';
import {
  cutBytes,
  type LabelledDataset,
  type LabelledValue,
  type Measured,
  partLengths,
  SPSS_MAX_STRING_BYTES,
} from '../labelled/dataset.ts';
import { type SavColumn, type SavVariable, savColumns, segmentBytes } from './variables.ts';

/** Seconds from SPSS's epoch (1582-10-14, the Gregorian calendar's start) to 1970-01-01. */
const SPSS_EPOCH_SECONDS = 12_219_379_200;
const SYSMIS = -Number.MAX_VALUE;
const BIAS = 100;
const CODE = { END: 252, RAW: 253, SPACES: 254, SYSMIS: 255 } as const;
/** SPSS documents variable labels of up to 255 bytes and value labels of up to 120. */
const VARIABLE_LABEL_BYTES = 255;
const VALUE_LABEL_BYTES = 120;
const FILE_LABEL_BYTES = 60;
const SPACE = 0x20;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** An SPSS time: seconds since 1582-10-14 00:00:00, from milliseconds since 1970 (UTC). */
export const spssTime = (ms: number) => ms / 1000 + SPSS_EPOCH_SECONDS;

export class SavEncoder {
  readonly columns: SavColumn[];
  readonly #out = new Bytes();
  /** The current block of 8 command bytes, and the raw 8-byte values that follow it. */
  readonly #codes = new Uint8Array(8);
  #codeCount = 0;
  readonly #raw = new Bytes(64);
  readonly #unit = Buffer.alloc(8);
  #rows = 0;

  constructor(
    readonly dataset: LabelledDataset,
    readonly measured: Measured,
  ) {
    this.columns = savColumns(dataset, measured);
  }

  /** Everything before the first case. */
  dictionary(): Buffer {
    const out = new Bytes();
    const variables = this.columns.flatMap((c) => c.targets);
    const units = variables.reduce(
      (n, v) => n + v.segments.reduce((m, w) => m + (w === 0 ? 1 : segmentBytes(w) / 8), 0),
      0,
    );
    const created = this.dataset.createdAt;
    const day = String(created.getUTCDate()).padStart(2, '0');
    const year = String(created.getUTCFullYear() % 100).padStart(2, '0');
    const time = created.toISOString().slice(11, 19);
    out
      .bytes('$FL2')
      .fixed('@(#) SPSS DATA FILE study-export', 60, SPACE)
      .i32(2) // layout code
      .i32(units) // nominal case size
      .i32(1) // bytecode compression
      .i32(0) // no weight variable
      .i32(this.measured.rows)
      .f64(BIAS)
      .fixed(`${day} ${MONTHS[created.getUTCMonth()]} ${year}`, 9, SPACE)
      .fixed(time, 8, SPACE)
      .fixed(fileLabel(this.dataset), 64, SPACE)
      .fixed('', 3, 0);
    for (const variable of variables) variableRecords(out, variable);
    for (const column of this.columns) valueLabelRecords(out, column);
    extensionRecords(out, variables);
    out.i32(999).i32(0);
    return out.take();
  }

  /** Encodes one case; its bytes are read with `pending()`. */
  row(values: readonly LabelledValue[]): void {
    this.#rows++;
    this.columns.forEach((column, i) => {
      const value = values[i] ?? null;
      if (column.variable.kind === 'text') this.#text(column.targets, typeof value === 'string' ? value : '');
      else
        this.#number(typeof value === 'number' && column.variable.kind === 'time' ? spssTime(value) : value);
    });
  }

  /** The bytes encoded since the last flush, without a copy: write them, then `clear()`. */
  pending(): Buffer {
    return this.#out.view();
  }

  clear(): void {
    this.#out.clear();
  }

  get pendingBytes(): number {
    return this.#out.length;
  }

  /** The last block of command bytes, closed by the end-of-data code, after what is pending. */
  end(): Buffer {
    if (this.#rows !== this.measured.rows) {
      throw new Error(`SPSS file: ${this.#rows} cases written, ${this.measured.rows} declared in its header`);
    }
    if (this.#codeCount > 0) {
      this.#codes.fill(0, this.#codeCount);
      this.#codes[this.#codeCount] = CODE.END;
      this.#codeCount = 8;
      this.#flushBlock();
    }
    return this.#out.take();
  }

  #number(value: LabelledValue): void {
    if (typeof value !== 'number' || Number.isNaN(value)) this.#code(CODE.SYSMIS);
    else if (Number.isInteger(value) && value >= 1 - BIAS && value <= 251 - BIAS) this.#code(value + BIAS);
    else {
      this.#unit.writeDoubleLE(value, 0);
      this.#rawUnit(this.#unit);
    }
  }

  #text(targets: readonly SavVariable[], value: string): void {
    const bytes = Buffer.from(value, 'utf8');
    const lengths =
      bytes.length <= SPSS_MAX_STRING_BYTES ? [bytes.length] : partLengths(bytes, SPSS_MAX_STRING_BYTES);
    let start = 0;
    targets.forEach((target, part) => {
      const length = lengths[part] ?? 0;
      if (length > target.width)
        throw new Error(`SPSS file: a value of ${target.name} is wider than measured`);
      this.#string(target, bytes.subarray(start, start + length));
      start += length;
    });
  }

  /**
   * A string variable's value: each segment's 255 bytes (or the whole), padded with spaces.
   * Padding is most of a wide column's units, so runs of it are written a block at a time, and
   * the segments after the value's end are counted, not walked.
   */
  #string(target: SavVariable, bytes: Buffer): void {
    const perSegment = target.segments.length > 1 ? 255 : target.width;
    let spaces = 0;
    for (let segment = 0; segment < target.segments.length; segment++) {
      const start = segment * perSegment;
      if (start >= bytes.length) {
        spaces += target.unitsFrom[segment]!;
        break;
      }
      const end = Math.min(bytes.length, start + perSegment);
      const dataUnits = Math.ceil((end - start) / 8);
      for (let unit = 0; unit < dataUnits; unit++) {
        const from = start + unit * 8;
        const to = Math.min(end, from + 8);
        if (allSpaces(bytes, from, to)) {
          spaces++;
          continue;
        }
        this.#spaces(spaces);
        spaces = 0;
        this.#raw.copy(bytes, from, to, 8, SPACE);
        this.#code(CODE.RAW);
      }
      spaces += segmentBytes(target.segments[segment]!) / 8 - dataUnits;
    }
    this.#spaces(spaces);
  }

  /** `count` units of spaces: whole blocks of command bytes at once where the block is empty. */
  #spaces(count: number): void {
    let left = count;
    while (left > 0 && this.#codeCount > 0) {
      this.#code(CODE.SPACES);
      left--;
    }
    const blocks = Math.floor(left / 8);
    if (blocks > 0) this.#out.repeat(CODE.SPACES, blocks * 8);
    for (let i = blocks * 8; i < left; i++) this.#code(CODE.SPACES);
  }

  #code(code: number): void {
    this.#codes[this.#codeCount++] = code;
    if (this.#codeCount === 8) this.#flushBlock();
  }

  #rawUnit(unit: Uint8Array): void {
    this.#raw.bytes(unit);
    this.#code(CODE.RAW);
  }

  #flushBlock(): void {
    this.#out.bytes(this.#codes);
    this.#out.bytes(this.#raw.view());
    this.#raw.clear();
    this.#codeCount = 0;
  }
}

/**
 * The file label: the label cut to leave room for its end, in 60 of the header's 64 bytes
 * (PSPP reads no more than 60 of them).
 */
function fileLabel(dataset: LabelledDataset): Buffer {
  const end = Buffer.from(dataset.labelEnd, 'utf8');
  return Buffer.concat([cutBytes(dataset.label, Math.max(0, FILE_LABEL_BYTES - end.length)), end]);
}

function allSpaces(bytes: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (bytes[i] !== SPACE) return false;
  return true;
}

function variableRecords(out: Bytes, variable: SavVariable): void {
  variable.segments.forEach((width, segment) => {
    const label = segment === 0 ? cutBytes(variable.label, VARIABLE_LABEL_BYTES) : null;
    const format = width === 0 ? variable.format : (1 << 16) | (width << 8);
    out
      .i32(2)
      .i32(width)
      .i32(label && label.length > 0 ? 1 : 0)
      .i32(0)
      .i32(format)
      .i32(format);
    out.fixed(variable.segmentNames[segment]!, 8, SPACE);
    if (label && label.length > 0) out.i32(label.length).fixed(label, Math.ceil(label.length / 4) * 4, SPACE);
    for (let unit = 1; unit < segmentBytes(width) / 8; unit++) {
      out.i32(2).i32(-1).i32(0).i32(0).i32(0).i32(0).fixed('', 8, SPACE);
    }
  });
}

function valueLabelRecords(out: Bytes, column: SavColumn): void {
  if (column.variable.kind !== 'coded' || column.variable.labels.length === 0) return;
  out.i32(3).i32(column.variable.labels.length);
  for (const { code, label } of column.variable.labels) {
    const text = cutBytes(label, VALUE_LABEL_BYTES);
    out
      .f64(code)
      .u8(text.length)
      .fixed(text, Math.ceil((text.length + 1) / 8) * 8 - 1, SPACE);
  }
  out.i32(4).i32(1).i32(column.targets[0]!.index);
}

function extension(out: Bytes, subtype: number, size: number, data: Bytes | Buffer): void {
  const bytes = data instanceof Bytes ? data.take() : data;
  out
    .i32(7)
    .i32(subtype)
    .i32(size)
    .i32(bytes.length / size)
    .bytes(bytes);
}

function extensionRecords(out: Bytes, variables: readonly SavVariable[]): void {
  // Machine integer info: version 1.0.0, machine -1, IEEE 754, compression 1, little-endian, UTF-8.
  extension(out, 3, 4, new Bytes(32).i32(1).i32(0).i32(0).i32(-1).i32(1).i32(1).i32(2).i32(65001));
  extension(out, 4, 8, new Bytes(24).f64(SYSMIS).f64(Number.MAX_VALUE).f64(SYSMIS));
  const display = new Bytes();
  for (const v of variables) {
    v.segments.forEach((_, segment) => {
      display
        .i32(v.measure)
        .i32(segment === 0 ? v.columns : 8)
        .i32(v.alignment);
    });
  }
  extension(out, 11, 4, display);
  extension(out, 13, 1, Buffer.from(variables.map((v) => `${v.shortName}=${v.name}`).join('\t'), 'utf8'));
  const veryLong = variables.filter((v) => v.width > 255);
  if (veryLong.length > 0) {
    const text = veryLong.map((v) => `${v.shortName}=${String(v.width).padStart(5, '0')}\0\t`).join('');
    extension(out, 14, 1, Buffer.from(text, 'latin1'));
  }
  extension(out, 20, 1, Buffer.from('UTF-8', 'latin1'));
}
