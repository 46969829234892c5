/**
 * How a labelled dataset's variables become an SPSS system file's variable records (PSPP's
 * documentation of the format, "System File Format"). A number is one 8-byte unit. A text is
 * one string variable, or, past SPSS's widest string (32,767 bytes), several (its parts, named
 * `<name>_2`, `<name>_3`, …). A string variable wider than 255 bytes is a "very long string":
 * segments of width 255 (one for every 252 bytes of width) whose data is packed 255 bytes a
 * segment; each segment is a variable record followed by its continuation records, one for
 * every further 8 bytes.
 */
import {
  type LabelledDataset,
  type LabelledVariable,
  type Measured,
  SPSS_MAX_STRING_BYTES,
} from '../labelled/dataset.ts';

/** One string or numeric variable of the file, as the file's records describe it. */
export interface SavVariable {
  /** The long name (long variable names record). */
  name: string;
  /** Its first record's short name, unique in the file. */
  shortName: string;
  label: string;
  /** 0 for a number; else the string's width in bytes. */
  width: number;
  /** Segments' widths: one for a number or a string up to 255 bytes. */
  segments: number[];
  /** Each segment's short name. */
  segmentNames: string[];
  /** The 8-byte units of the segments from each one to the last. */
  unitsFrom: number[];
  /** 1-based dictionary index of its first record. */
  index: number;
  /** print/write format: type << 16 | width << 8 | decimals. */
  format: number;
  /** Display parameters: 1 nominal, 3 scale; column width; 0 left, 1 right. */
  measure: 1 | 3;
  columns: number;
  alignment: 0 | 1;
}

/** Where each of a dataset variable's values goes: its SPSS variables (a text's parts). */
export interface SavColumn {
  variable: LabelledVariable;
  targets: SavVariable[];
}

const FORMAT = { A: 1, F: 5, DATETIME: 22 } as const;
const format = (type: number, width: number, decimals = 0) => (type << 16) | (width << 8) | decimals;

/** Bytes a segment of `width` takes in a case: whole 8-byte units. */
export const segmentBytes = (width: number) => Math.ceil(width / 8) * 8;

/** The segments of a string of `width` bytes: 255 each but the last (PSPP's rule). */
export function segmentWidths(width: number): number[] {
  if (width <= 255) return [width];
  const count = Math.ceil(width / 252);
  return [...Array(count - 1).fill(255), width - (count - 1) * 252];
}

/** The dataset's variables as SPSS variables, in order, each with its records' places. */
export function savColumns(dataset: LabelledDataset, measured: Measured): SavColumn[] {
  const taken = new Set(dataset.variables.map((v) => v.name.toLowerCase()));
  let index = 1;
  let shortNames = 0;
  const nextShort = () => `V${++shortNames}`;
  const place = (source: LabelledVariable, name: string, label: string, width: number): SavVariable => {
    const segments = width === 0 ? [0] : segmentWidths(width);
    const segmentNames = segments.map(nextShort);
    const units = segments.map((w) => (w === 0 ? 1 : segmentBytes(w) / 8));
    const unitsFrom = units.map((_, i) => units.slice(i).reduce((a, b) => a + b, 0));
    const variable: SavVariable = {
      name,
      shortName: segmentNames[0]!,
      label,
      width,
      segments,
      segmentNames,
      unitsFrom,
      index,
      ...display(source, width),
    };
    index += unitsFrom[0]!;
    return variable;
  };

  return dataset.variables.map((variable, i) => {
    if (variable.kind !== 'text')
      return { variable, targets: [place(variable, variable.name, variable.label, 0)] };
    const extent = measured.text.get(i);
    const parts = extent && extent.partMaxBytes.length > 0 ? extent.partMaxBytes : [1];
    const targets = parts.map((partWidth, part) => {
      const name = part === 0 ? variable.name : freeName(`${variable.name}_${part + 1}`, taken);
      const label = part === 0 ? variable.label : `(part ${part + 1} of ${parts.length}) ${variable.label}`;
      return place(variable, name, label, Math.max(1, Math.min(partWidth, SPSS_MAX_STRING_BYTES)));
    });
    return { variable, targets };
  });
}

function display(
  source: LabelledVariable,
  width: number,
): Pick<SavVariable, 'format' | 'measure' | 'columns' | 'alignment'> {
  switch (source.kind) {
    case 'text':
      return {
        format: format(FORMAT.A, Math.min(width, 255)),
        measure: 1,
        columns: Math.min(width, 50),
        alignment: 0,
      };
    case 'integer':
      return { format: format(FORMAT.F, 10), measure: 3, columns: 10, alignment: 1 };
    case 'coded':
      return { format: format(FORMAT.F, 3), measure: 1, columns: 12, alignment: 1 };
    case 'time':
      return { format: format(FORMAT.DATETIME, 20), measure: 3, columns: 20, alignment: 1 };
  }
}

/** `base`, or `base_2`, `base_3`… : the first not taken (SPSS names ignore case). */
function freeName(base: string, taken: Set<string>): string {
  let name = base;
  for (let n = 2; taken.has(name.toLowerCase()); n++) name = `${base}_${n}`;
  taken.add(name.toLowerCase());
  return name;
}
