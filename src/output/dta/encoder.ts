/**
 * A Stata dataset in .dta format 118 (Stata 14 and later), written from Stata's published
 * description of the format ("dta" in Stata's documentation, format 118): the header with the
 * observation count and the data label, the map of section offsets, the variables' types,
 * names, display formats, value-label names and labels (80 characters; a longer label is cut
 * with an ellipsis and kept whole in the variable's notes, characteristics `note0`/`note1`), the
 * data, the long strings (strL, as GSOs after the data) and the value labels. Text is UTF-8.
 *
 * The map gives every section's offset before the data, so the observation count and each
 * long string's size are measured first (`Measure`); then observations are encoded one at a
 * time: `row()` returns the observation's bytes for the data section and its strLs' bytes,
 * which the caller keeps (a scratch file) until the data section is written, so memory stays
 * flat in the number of observations.
 */
import { Bytes } from '../labelled/bytes.ts';
import {
  cutBytes,
  cutCharacters,
  type LabelledDataset,
  type LabelledValue,
  type LabelledVariable,
  type Measured,
} from '../labelled/dataset.ts';

/** Milliseconds from Stata's epoch (1960-01-01) to 1970-01-01. */
const STATA_EPOCH_MS = 315_619_200_000;
/** Stata's "." for a double: 2^1023. */
const MISSING_DOUBLE = Buffer.from([0, 0, 0, 0, 0, 0, 0xe0, 0x7f]);
const TYPE = { strL: 32768, double: 65526, byte: 65530 } as const;
const MISSING_BYTE = 101;
/** The widest fixed string (str2045); a longer text is a strL. */
const STR_MAX = 2045;
const LABEL_CHARACTERS = 80;
const NAME_BYTES = 129;
const FORMAT_BYTES = 57;
const LABEL_BYTES = 321;
/** "GSO", v (4 bytes), o (8), t (1), len (4); then the bytes and their null. */
const GSO_HEADER_BYTES = 3 + 4 + 8 + 1 + 4;
const GSO_TEXT = 130;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** A Stata %tc time: milliseconds since 1960-01-01 00:00:00, from milliseconds since 1970 (UTC). */
export const stataTime = (ms: number) => ms + STATA_EPOCH_MS;

interface DtaVariable {
  source: LabelledVariable;
  /** 1-based, as a strL's (v,o) names it. */
  number: number;
  type: number;
  /** Bytes it takes in an observation. */
  size: number;
  format: string;
}

export class DtaEncoder {
  readonly variables: DtaVariable[];
  readonly #rowBytes: number;
  readonly #strlBytes: number;
  readonly #row = new Bytes();
  readonly #strls = new Bytes();
  #observation = 0;
  #strlWritten = 0;

  constructor(
    readonly dataset: LabelledDataset,
    readonly measured: Measured,
  ) {
    this.variables = dataset.variables.map((source, i) => describe(source, i, measured));
    this.#rowBytes = this.variables.reduce((n, v) => n + v.size, 0);
    this.#strlBytes = this.variables.reduce((n, v, i) => {
      if (v.type !== TYPE.strL) return n;
      const extent = measured.text.get(i);
      return n + (extent ? extent.nonEmpty * (GSO_HEADER_BYTES + 1) + extent.totalBytes : 0);
    }, 0);
  }

  /** The header, map and variable sections, up to and including the opening of the data. */
  head(): Buffer {
    const sections = descriptorSections(this.dataset, this.variables);
    const header = headerSection(this.dataset, this.variables.length, this.measured.rows);
    const mapBytes = '<map>'.length + 14 * 8 + '</map>'.length;
    const offsets: number[] = [0, header.length];
    let at = header.length + mapBytes;
    for (const section of sections) {
      offsets.push(at);
      at += section.length;
    }
    // at is now where <data> begins.
    const data = at;
    const strls = data + '<data>'.length + this.measured.rows * this.#rowBytes + '</data>'.length;
    const valueLabels = strls + '<strls>'.length + this.#strlBytes + '</strls>'.length;
    const close = valueLabels + valueLabelSection(this.dataset).length;
    offsets.push(data, strls, valueLabels, close, close + '</stata_dta>'.length);
    const map = new Bytes(mapBytes).bytes('<map>');
    for (const offset of offsets) map.u64(offset);
    map.bytes('</map>');
    return Buffer.concat([header, map.take(), ...sections, Buffer.from('<data>')]);
  }

  /**
   * Encodes one observation: its bytes for the data section and its strLs (GSOs) for the strLs
   * section, read with `data` and `strls` (views, valid until cleared) and cleared once written.
   */
  row(values: readonly LabelledValue[]): void {
    const o = ++this.#observation;
    for (const variable of this.variables) {
      const value = values[variable.number - 1] ?? null;
      this.#value(variable, value, o);
    }
  }

  readonly data = {
    pending: () => this.#row.view(),
    clear: () => this.#row.clear(),
  };

  readonly strls = {
    pending: () => this.#strls.view(),
    clear: () => this.#strls.clear(),
  };

  /** Closes the data section and opens the strLs'. */
  afterData(): Buffer {
    if (this.#observation !== this.measured.rows) {
      throw new Error(
        `Stata file: ${this.#observation} observations written, ${this.measured.rows} declared`,
      );
    }
    return Buffer.from('</data><strls>');
  }

  /** Counts strL bytes as they are copied after the data, to check them against the map. */
  countStrls(bytes: number): void {
    this.#strlWritten += bytes;
  }

  /** Closes the strLs, then the value labels and the file. */
  end(): Buffer {
    if (this.#strlWritten !== this.#strlBytes) {
      throw new Error(`Stata file: ${this.#strlWritten} bytes of strLs written, ${this.#strlBytes} declared`);
    }
    return Buffer.concat([
      Buffer.from('</strls>'),
      valueLabelSection(this.dataset),
      Buffer.from('</stata_dta>'),
    ]);
  }

  #value(variable: DtaVariable, value: LabelledValue, o: number): void {
    const row = this.#row;
    const { source } = variable;
    if (source.kind === 'text') {
      const text = typeof value === 'string' ? value : '';
      if (variable.type !== TYPE.strL) {
        row.fixed(text, variable.size, 0);
      } else if (text === '') {
        row.u16(0).uint(0, 6);
      } else {
        const bytes = Buffer.from(text, 'utf8');
        row.u16(variable.number).uint(o, 6);
        this.#strls
          .bytes('GSO')
          .u32(variable.number)
          .u64(o)
          .u8(GSO_TEXT)
          .u32(bytes.length + 1);
        this.#strls.bytes(bytes).u8(0);
      }
    } else if (variable.type === TYPE.byte) {
      row.u8(typeof value === 'number' ? value : MISSING_BYTE);
    } else if (typeof value === 'number' && !Number.isNaN(value)) {
      row.f64(source.kind === 'time' ? stataTime(value) : value);
    } else {
      row.bytes(MISSING_DOUBLE);
    }
  }
}

function describe(source: LabelledVariable, index: number, measured: Measured): DtaVariable {
  const number = index + 1;
  switch (source.kind) {
    case 'text': {
      const width = Math.max(1, measured.text.get(index)?.maxBytes ?? 0);
      if (width > STR_MAX) return { source, number, type: TYPE.strL, size: 8, format: '%-9s' };
      return { source, number, type: width, size: width, format: `%-${Math.min(width, 80)}s` };
    }
    case 'coded': {
      // A byte holds -127…100; codes beyond it are kept whole as doubles.
      const small = source.labels.every((l) => Number.isInteger(l.code) && l.code >= -127 && l.code <= 100);
      return small
        ? { source, number, type: TYPE.byte, size: 1, format: '%8.0g' }
        : { source, number, type: TYPE.double, size: 8, format: '%10.0g' };
    }
    case 'integer':
      return { source, number, type: TYPE.double, size: 8, format: '%12.0g' };
    case 'time':
      return { source, number, type: TYPE.double, size: 8, format: '%tcCCYY-NN-DD_HH:MM:SS' };
  }
}

function tagged(tag: string, body: Bytes): Buffer {
  return Buffer.concat([Buffer.from(`<${tag}>`), body.take(), Buffer.from(`</${tag}>`)]);
}

function headerSection(dataset: LabelledDataset, variables: number, observations: number): Buffer {
  const room = LABEL_CHARACTERS - Array.from(dataset.labelEnd).length;
  const label = Buffer.from(cutCharacters(dataset.label, room) + dataset.labelEnd, 'utf8');
  const t = dataset.createdAt;
  const stamp = `${String(t.getUTCDate()).padStart(2, '0')} ${MONTHS[t.getUTCMonth()]} ${t.getUTCFullYear()} ${t.toISOString().slice(11, 16)}`;
  const out = new Bytes(1024);
  out.bytes('<stata_dta><header><release>118</release><byteorder>LSF</byteorder>');
  out.bytes('<K>').u16(variables).bytes('</K><N>').u64(observations).bytes('</N>');
  out.bytes('<label>').u16(label.length).bytes(label).bytes('</label>');
  out.bytes('<timestamp>').u8(stamp.length).bytes(stamp).bytes('</timestamp></header>');
  return out.take();
}

/** variable_types … characteristics, each with its tags. */
function descriptorSections(dataset: LabelledDataset, variables: readonly DtaVariable[]): Buffer[] {
  const types = new Bytes();
  const names = new Bytes();
  const formats = new Bytes();
  const valueLabelNames = new Bytes();
  const labels = new Bytes();
  for (const v of variables) {
    types.u16(v.type);
    names.fixed(v.source.name, NAME_BYTES, 0);
    formats.fixed(v.format, FORMAT_BYTES, 0);
    valueLabelNames.fixed(v.source.kind === 'coded' ? v.source.name : '', NAME_BYTES, 0);
    labels.fixed(cutCharacters(v.source.label, LABEL_CHARACTERS), LABEL_BYTES, 0);
  }
  const sortlist = new Bytes().fixed('', (variables.length + 1) * 2, 0);
  return [
    tagged('variable_types', types),
    tagged('varnames', names),
    tagged('sortlist', sortlist),
    tagged('formats', formats),
    tagged('value_label_names', valueLabelNames),
    tagged('variable_labels', labels),
    tagged('characteristics', notes(dataset, variables)),
  ];
}

/**
 * What a cut label leaves out, as Stata's notes keep it: characteristics `note0` (how many) and
 * `note1` (the whole text), of the variable, or of `_dta` for the data label.
 */
function notes(dataset: LabelledDataset, variables: readonly DtaVariable[]): Bytes {
  const out = new Bytes();
  const note = (owner: string, text: string) => {
    for (const [name, contents] of [
      ['note0', '1'],
      ['note1', text],
    ] as const) {
      const bytes = cutBytes(contents, 67_783);
      out.bytes('<ch>').u32(2 * NAME_BYTES + bytes.length + 1);
      out.fixed(owner, NAME_BYTES, 0).fixed(name, NAME_BYTES, 0).bytes(bytes).u8(0).bytes('</ch>');
    }
  };
  const whole = dataset.label + dataset.labelEnd;
  if (Array.from(whole).length > LABEL_CHARACTERS) note('_dta', whole);
  for (const v of variables) {
    if (Array.from(v.source.label).length > LABEL_CHARACTERS) note(v.source.name, v.source.label);
  }
  return out;
}

function valueLabelSection(dataset: LabelledDataset): Buffer {
  const out = new Bytes(4096).bytes('<value_labels>');
  for (const variable of dataset.variables) {
    if (variable.kind !== 'coded' || variable.labels.length === 0) continue;
    const texts = variable.labels.map((l) => Buffer.concat([cutBytes(l.label, 32_000), Buffer.from([0])]));
    const textBytes = texts.reduce((n, t) => n + t.length, 0);
    const n = variable.labels.length;
    out
      .bytes('<lbl>')
      .u32(8 + 8 * n + textBytes)
      .fixed(variable.name, NAME_BYTES, 0)
      .fixed('', 3, 0);
    out.i32(n).i32(textBytes);
    let offset = 0;
    for (const text of texts) {
      out.i32(offset);
      offset += text.length;
    }
    for (const label of variable.labels) out.i32(label.code);
    for (const text of texts) out.bytes(text);
    out.bytes('</lbl>');
  }
  return out.bytes('</value_labels>').take();
}
