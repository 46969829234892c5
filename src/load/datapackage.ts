/**
 * datapackage.json: a Frictionless Data Package (tabular-data-package) describing the
 * tables of a run, derived from the table declarations. Each file is one resource; the
 * first listed format keeps the bare table name ("answers"), other formats get a suffix
 * ("answers-parquet"), and foreign keys point at resources of the same format. Every
 * resource names its table in `table`: resources with the same `table` hold the same rows.
 *
 * Strict readers (the `datapackage` reference library for JavaScript) cast every CSV cell
 * with this schema, so: timestamps declare the exact format the CSV holds; an empty cell is
 * a missing value, so a column that may be "" is not `required`; keys use columns that always
 * have a value; the CSV files carry no byte order mark (that reader takes it for part of the
 * first column's name).
 */
import { type Format, isTableFormat, type TableFormat } from '../config/schema.ts';
import { type Column, type TableDeclaration, type TableName, tables } from './tables.ts';

export interface PackageResourceFile {
  table: TableName;
  /** Path relative to the run directory, with "/" separators. */
  path: string;
  format: TableFormat;
  bytes: number;
  sha256: string;
}

export interface DataPackageOptions {
  name: string;
  formats: readonly Format[];
  resources: readonly PackageResourceFile[];
}

const fieldTypes = {
  string: 'string',
  integer: 'integer',
  boolean: 'boolean',
  timestamp: 'datetime',
  json: 'object',
} as const;
/** What Date.toISOString() writes, "2026-11-21T23:55:00.000Z", as a Frictionless (strptime) pattern. */
export const timestampFormat = '%Y-%m-%dT%H:%M:%S.%fZ';
const mediaTypes: Record<TableFormat, string> = {
  csv: 'text/csv',
  parquet: 'application/vnd.apache.parquet',
};

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
export function resourceName(table: TableName, format: TableFormat, formats: readonly Format[]): string {
  // xlsx workbooks are per study, not resources: the first table format keeps the bare names.
  const primary = formats.find(isTableFormat) ?? format;
  return format === primary ? table : `${table}-${format}`;
}

export function dataPackage(options: DataPackageOptions) {
  return {
    profile: 'tabular-data-package',
    // Package names are lower case in the Frictionless specification.
    name: options.name.toLowerCase().replace(/[^a-z0-9._-]/g, '-'),
    description:
      'Tables of one study-export run. Resources with the same "table" hold the same rows in ' +
      'different formats; a CSV cell that a spreadsheet would run as a formula may start with an ' +
      "added ' (csv.escape_formulae), the Parquet value never does.",
    resources: options.resources.map((file) => resource(file, options.formats)),
  };
}

function resource(file: PackageResourceFile, formats: readonly Format[]) {
  const table = tables[file.table];
  const others = formats.filter(isTableFormat).filter((format) => format !== file.format);
  const sameRows = others.map((format) => `"${resourceName(file.table, format, formats)}" (${format})`);
  return {
    profile: 'tabular-data-resource',
    name: resourceName(file.table, file.format, formats),
    table: file.table,
    path: file.path,
    description: table.description + (sameRows.length ? ` Same rows as ${sameRows.join(', ')}.` : ''),
    format: file.format,
    mediatype: mediaTypes[file.format],
    ...(file.format === 'csv' ? { encoding: 'utf-8', dialect: csvDialect } : {}),
    bytes: file.bytes,
    hash: `sha256:${file.sha256}`,
    schema: schema(table, file.format, formats),
  };
}

function schema(table: TableDeclaration, format: TableFormat, formats: readonly Format[]) {
  return {
    fields: table.columns.map(field),
    // An empty CSV cell is a missing value (the profile wants at least one); Parquet has real
    // nulls and shares the schema.
    missingValues: [''],
    primaryKey: [...table.primaryKey],
    // The profile refuses an empty list: a table without references has no foreignKeys.
    ...(table.foreignKeys.length > 0
      ? {
          foreignKeys: table.foreignKeys.map((key) => ({
            fields: [...key.fields],
            reference: {
              resource: resourceName(key.reference.resource as TableName, format, formats),
              fields: [...key.reference.fields],
            },
          })),
        }
      : {}),
  };
}

function field(column: Column) {
  return {
    name: column.name,
    type: fieldTypes[column.type],
    ...(column.type === 'timestamp' ? { format: timestampFormat } : {}),
    description: column.description,
    // "" is read back as missing, so a column that may be "" cannot be required.
    constraints: { required: !column.nullable && !column.canBeEmpty },
  };
}
