/**
 * current/datapackage.json: the current dataset's tables (fields, types, keys) as a
 * Frictionless Data Package, from the same builder as a run's. A table's parts change with
 * every run and live in one folder per study, so each resource's path is the pattern of its
 * parts (answers/*\/*.parquet), as DuckDB, Spark or pandas are given it; there are no sizes or
 * hashes (each run's manifest has those of the files it wrote).
 */
import type { Format, TableFormat } from '../config/schema.ts';
import { dataPackage } from '../load/datapackage.ts';
import { tableNames } from '../load/tables.ts';

/** The formats of the current dataset: Parquet always (runs merge from it), CSV when asked for. */
export function currentFormats(formats: readonly Format[]): TableFormat[] {
  return ['parquet', ...(formats.includes('csv') ? (['csv'] as const) : [])];
}

export function currentPackage(name: string, formats: readonly Format[]) {
  const kept = currentFormats(formats);
  const described = dataPackage({
    name,
    formats: kept,
    resources: kept.flatMap((format) =>
      tableNames.map((table) => ({ table, path: `${table}/*/*.${format}`, format, bytes: 0, sha256: '' })),
    ),
  });
  return {
    ...described,
    resources: described.resources.map(({ bytes: _bytes, hash: _hash, ...resource }) => resource),
  };
}
