/**
 * datapackage.json: a Frictionless Data Package (tabular-data-package) describing the
 * tables of a run, derived from the table declarations. Each file is one resource; the
 * first listed format keeps the bare table name ("answers"), other formats get a suffix
 * ("answers-parquet"), and foreign keys point at resources of the same format.
 */
import type { Format } from '../config/schema.ts';
import { type Column, type TableName, tables } from './tables.ts';

export interface PackageResourceFile {
  table: TableName;
  /** Path relative to the run directory, with "/" separators. */
  path: string;
  format: Format;
  bytes: number;
  sha256: string;
}

export interface DataPackageOptions {
  name: string;
  formats: readonly Format[];
  resources: readonly PackageResourceFile[];
}

const fieldTypes = { string: 'string', integer: 'integer', timestamp: 'datetime', json: 'object' } as const;
const mediaTypes: Record<Format, string> = { csv: 'text/csv', parquet: 'application/vnd.apache.parquet' };

/** The dialect our CSV writer produces (RFC 4180 with CRLF line ends). */
export const csvDialect = {
  delimiter: ',',
  lineTerminator: '\r\n',
  quoteChar: '"',
  doubleQuote: true,
  skipInitialSpace: false,
  header: true,
} as const;

/** The resource name of a table in a format: bare for the first format, suffixed for others. */
export function resourceName(table: TableName, format: Format, formats: readonly Format[]): string {
  const primary = formats[0] ?? format;
  return format === primary ? table : `${table}-${format}`;
}

export function dataPackage(options: DataPackageOptions) {
  return {
    profile: 'tabular-data-package',
    // Package names are lower case in the Frictionless specification.
    name: options.name.toLowerCase().replace(/[^a-z0-9._-]/g, '-'),
    resources: options.resources.map((file) => resource(file, options.formats)),
  };
}

function resource(file: PackageResourceFile, formats: readonly Format[]) {
  const table = tables[file.table];
  return {
    profile: 'tabular-data-resource',
    name: resourceName(file.table, file.format, formats),
    path: file.path,
    description: table.description,
    format: file.format,
    mediatype: mediaTypes[file.format],
    ...(file.format === 'csv' ? { encoding: 'utf-8', dialect: csvDialect } : {}),
    bytes: file.bytes,
    hash: `sha256:${file.sha256}`,
    schema: {
      fields: table.columns.map(field),
      // An empty cell is a missing value in CSV; Parquet has real nulls.
      missingValues: [''],
      primaryKey: [...table.primaryKey],
      foreignKeys: table.foreignKeys.map((key) => ({
        fields: [...key.fields],
        reference: {
          resource: resourceName(key.reference.resource as TableName, file.format, formats),
          fields: [...key.reference.fields],
        },
      })),
    },
  };
}

function field(column: Column) {
  return {
    name: column.name,
    type: fieldTypes[column.type],
    description: column.description,
    constraints: { required: !column.nullable },
  };
}
