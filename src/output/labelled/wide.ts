/**
 * A study's wide sheet as a labelled dataset (one row per response, as wide/<link_id>.csv):
 * the sheet's fixed columns (status and modality as codes with value labels, times as
 * times), then one variable per question slot labelled with its question text, then one per
 * attribute key. Names come from names.ts; the same function turns a wide row into values for
 * the measure and for the writer, so both see the same bytes.
 */
import { type WideColumn, type WideRow, wideValue } from '../../records.ts';
import { wideSheet } from '../../tables/index.ts';
import {
  emptyExtent,
  type LabelledDataset,
  type LabelledValue,
  type LabelledVariable,
  type Measured,
  measureText,
  type TextExtent,
} from './dataset.ts';
import { attributeVariableName, slotVariableName, uniqueNames } from './names.ts';

/** A variable of the dataset and the wide sheet's column it holds. */
export interface WideVariable {
  name: string;
  /** The sheet's header (for a question, its text, made distinct as the sheet does). */
  header: string;
  /** The question slot's ids, for a question's variable. */
  slot?: { questionId: string; conceptId: string | null };
  /** The attribute key, for an attribute's variable. */
  attribute?: string;
}

export interface WideDataset {
  dataset: LabelledDataset;
  variables: WideVariable[];
  values(row: WideRow): LabelledValue[];
}

/** The ids of a question column's key (questionKey: JSON of [question id, concept id]). */
function slotOf(column: WideColumn): { questionId: string; conceptId: string | null } {
  const [questionId, conceptId] = JSON.parse(column.key) as [string, string | null];
  return { questionId, conceptId };
}

/** Every variable's name: the fixed columns' keys, then the slots', then the attributes'. */
export function wideVariableNames(columns: readonly WideColumn[]): string[] {
  return uniqueNames([
    ...wideSheet.fixed.map((c) => c.key),
    ...columns.map((column) => {
      if (column.of === 'attribute') return attributeVariableName(column.key);
      const { questionId, conceptId } = slotOf(column);
      return slotVariableName(questionId, conceptId);
    }),
  ]);
}

/** Every variable of the dataset made of these columns: the fixed columns', then theirs. */
export function wideVariables(
  columns: readonly WideColumn[],
  names: readonly string[] = wideVariableNames(columns),
): WideVariable[] {
  return [
    ...wideSheet.fixed.map((column, i) => ({ name: names[i]!, header: column.header })),
    ...columns.map((column, i) => ({
      name: names[wideSheet.fixed.length + i]!,
      header: column.header,
      ...(column.of === 'question' ? { slot: slotOf(column) } : { attribute: column.key }),
    })),
  ];
}

export function wideDataset(
  study: { title: string; link_id: string },
  columns: readonly WideColumn[],
  exportedAt: Date,
): WideDataset {
  const names = wideVariableNames(columns);
  const fixed: LabelledVariable[] = wideSheet.fixed.map((column, i) => {
    const base = { name: names[i]!, label: column.description };
    if ('codes' in column) {
      return {
        ...base,
        kind: 'coded',
        labels: column.codes.map((label, code) => ({ code: code + 1, label })),
      };
    }
    if (column.type === 'timestamp') return { ...base, kind: 'time' };
    if (column.type === 'integer') return { ...base, kind: 'integer' };
    return { ...base, kind: 'text' };
  });
  const rest: LabelledVariable[] = columns.map((column, i) => ({
    kind: 'text',
    name: names[wideSheet.fixed.length + i]!,
    label: column.of === 'question' ? column.header : wideSheet.attributeDescription(column.key),
  }));
  const variables = wideVariables(columns, names);
  const stamp = `${exportedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return {
    dataset: {
      label: `${study.title} (${study.link_id})`,
      labelEnd: ` exported ${stamp}`,
      createdAt: exportedAt,
      variables: [...fixed, ...rest],
    },
    variables,
    values: (row) => [
      ...wideSheet.fixed.map((column, i) => fixedValue(fixed[i]!, row[column.key])),
      ...columns.map((column) => wideValue(row, column) ?? ''),
    ],
  };
}

function fixedValue(variable: LabelledVariable, value: string | number | null): LabelledValue {
  switch (variable.kind) {
    case 'text':
      return value === null ? '' : String(value);
    case 'time':
      return typeof value === 'string' ? timeValue(value) : null;
    case 'coded':
      return codeOf(variable, value);
    case 'integer':
      return typeof value === 'number' ? value : null;
  }
}

/** A time to the second, as the wide sheet shows it (the tables keep milliseconds). */
function timeValue(iso: string): number | null {
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? null : Math.floor(ms / 1000) * 1000;
}

function codeOf(
  variable: LabelledVariable & { kind: 'coded' },
  value: string | number | null,
): number | null {
  if (value === null) return null;
  const found = variable.labels.find((code) => code.label === value);
  if (!found) throw new Error(`wide sheet: ${variable.name} "${value}" has no code in the statistics files`);
  return found.code;
}

/**
 * A study's wide rows measured as they pass, before its columns are known: each text's extent
 * by what holds it (a fixed column, a question slot's cell, an attribute key), and the count.
 */
export class WideMeasure {
  rows = 0;
  readonly #fixed = new Map<string, TextExtent>();
  readonly #cells = new Map<string, TextExtent>();
  readonly #attributes = new Map<string, TextExtent>();

  add(row: WideRow): void {
    this.rows++;
    for (const column of wideSheet.fixed) {
      const value = row[column.key];
      if (typeof value === 'string') measureText(extentIn(this.#fixed, column.key), value);
    }
    for (const [key, value] of Object.entries(row.cells)) measureText(extentIn(this.#cells, key), value);
    for (const [key, value] of Object.entries(row.attributes))
      measureText(extentIn(this.#attributes, key), value);
  }

  /** The extent of the dataset `wideDataset` makes of these columns. */
  measured(columns: readonly WideColumn[]): Measured {
    const text = new Map<number, TextExtent>();
    wideSheet.fixed.forEach((column, i) => {
      text.set(i, this.#fixed.get(column.key) ?? emptyExtent());
    });
    columns.forEach((column, i) => {
      const extents = column.of === 'attribute' ? this.#attributes : this.#cells;
      text.set(wideSheet.fixed.length + i, extents.get(column.key) ?? emptyExtent());
    });
    return { rows: this.rows, text };
  }
}

function extentIn(extents: Map<string, TextExtent>, key: string): TextExtent {
  const found = extents.get(key);
  if (found) return found;
  const extent = emptyExtent();
  extents.set(key, extent);
  return extent;
}
