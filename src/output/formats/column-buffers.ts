/**
 * Rows buffered column by column, for one row group: the values only, not the row objects,
 * and an estimate of their bytes (string lengths, 8 per other value) to cut the group by.
 * Shared by the Parquet writer and the run's per-study buffers (table-writers.ts), so both
 * see the same values in the same order, whichever format they end up in.
 */
import { RunError } from '../../errors.ts';
import { type Column, type TableName, tables } from '../../tables/index.ts';

export class ColumnBuffers {
  readonly values: unknown[][];
  rows = 0;
  bytes = 0;
  readonly #columns: readonly Column[];

  /** `where`: the file the rows are for, named when a row is refused. */
  constructor(
    table: TableName,
    private readonly where: string,
  ) {
    this.#columns = tables[table].columns;
    this.values = this.#columns.map(() => []);
  }

  /** Appends one row's values; returns the bytes it added. */
  add(row: Record<string, unknown>): number {
    const columns = this.#columns;
    let bytes = 0;
    for (let i = 0; i < columns.length; i++) {
      const column = columns[i] as Column;
      const value = row[column.name] ?? null;
      // A null in a REQUIRED Parquet column would corrupt the file (hyparquet-writer does not check).
      if (value === null && !column.nullable) {
        throw new RunError(`${column.name} is required but a row has no value for it`, {
          context: { file: this.where },
        });
      }
      (this.values[i] as unknown[]).push(value);
      bytes += typeof value === 'string' ? value.length : 8;
    }
    this.rows++;
    this.bytes += bytes;
    return bytes;
  }
}
