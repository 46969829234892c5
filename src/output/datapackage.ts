/**
 * datapackage.json: a Frictionless Data Package describing every file of a run (or of
 * current/), derived from the table declarations. The tables are tabular resources with their
 * schema; each file is one resource, named after its table and format whatever the formats
 * of the run: "answers" is the CSV, "answers-parquet" the Parquet file, in a run and in
 * current/ alike, and foreign keys point at resources of the same format. Every table resource
 * names its table in `table`: resources with the same `table` hold the same rows.
 *
 * Profiles, so that v1 and v2 validators both accept it: the package is a `data-package` (it
 * holds media.zip, workbooks and the manifest beside the tables, which a
 * `tabular-data-package` may not); a CSV is a `tabular-data-resource`; a Parquet file is a
 * `data-resource` with its format, media type and schema (v1 reserves the tabular profile for
 * CSV); every other file is a `data-resource` with its format and media type.
 *
 * Strict readers (the `datapackage` reference library for JavaScript) cast every CSV cell
 * with this schema, so: timestamps declare a format every value the CSV holds casts with; an empty cell is
 * a missing value, so a column that may be "" is not `required`; keys use columns that always
 * have a value; table CSVs carry no byte order mark (that reader takes it for part of the
 * first column's name).
 *
 * No `licenses`: the data belongs to whoever ran the studies, and the tool cannot know the
 * terms it may be used under.
 */
import { createHash } from 'node:crypto';
import {
  type Column,
  type TableDeclaration,
  type TableName,
  tables,
  wideColumnDescription,
  wideSheet,
} from '../tables/index.ts';
import { csvDialect } from './formats/csv.ts';
import { outputFormats, type TableFormat, tableFormatNamed } from './formats/index.ts';
import { wideFormat } from './formats/wide.ts';

export interface PackageResourceFile {
  table: TableName;
  /**
   * Path relative to the package's folder, with "/" separators; several for a table in parts;
   * none for a table with no file yet (current/ of a shard that owns no study).
   */
  path: string | readonly string[];
  format: TableFormat;
  /** Size and sha256, for a single file whose bytes are known. */
  bytes?: number;
  sha256?: string;
  /** The columns the files hold, in their order, when not every declared column (default: all). */
  columns?: readonly string[];
}

/** A wide sheet: its header as written, and whether it starts with a byte order mark. */
export interface PackageSheet {
  path: string;
  header: readonly string[];
  bom: boolean;
  bytes?: number;
  sha256?: string;
}

/** Any other file: described by its format and media type. */
export interface PackageFile {
  path: string;
  bytes?: number;
  sha256?: string;
  description?: string;
}

/** Where the data came from: the service's base_url (never the key), or the sandbox. */
export interface PackageSource {
  base_url: string;
  sandbox: boolean;
}

export interface DataPackageOptions {
  name: string;
  title: string;
  description: string;
  created: string;
  source?: PackageSource;
  tables: readonly PackageResourceFile[];
  sheets?: readonly PackageSheet[];
  files?: readonly PackageFile[];
  /**
   * A package handed to someone else: how it was made (identified, or the profile and the
   * study's replacement counts, as src/privacy states it), as `privacy`, a property of the
   * package's own.
   */
  privacy?: object;
}

const fieldTypes = {
  string: 'string',
  integer: 'integer',
  boolean: 'boolean',
  timestamp: 'datetime',
  json: 'object',
} as const;
/**
 * The tables' timestamps are ISO 8601 UTC with milliseconds, or microseconds where the service
 * sent them ("2026-11-21T23:55:00.000Z", "2026-11-21T23:55:00.000001Z": src/util/timestamp.ts).
 * `any`, the Frictionless format for ISO 8601 of any precision: a strptime pattern with %f would
 * do in Python, but the reference reader for JavaScript maps %f to exactly three digits.
 */
export const timestampFormat = 'any';
/** A wide sheet's times, "2026-11-21 23:55:00" (load/wide.ts: spreadsheetTime). */
export const sheetTimeFormat = '%Y-%m-%d %H:%M:%S';

/** The resource name of a table in a format: the CSV keeps the bare name, Parquet is suffixed. */
export function resourceName(table: TableName, format: TableFormat): string {
  return `${table}${tableFormatNamed(format).resourceSuffix}`;
}

/** What a reader is told about every package: how formats relate, and the formula escape. */
export const packageNotes =
  'Resources with the same "table" hold the same rows in different formats; a CSV cell that a ' +
  "spreadsheet would run as a formula may start with an added ' (csv.escape_formulae), the " +
  'Parquet value never does. Times are UTC.';

export function dataPackage(options: DataPackageOptions) {
  const names = new ResourceNames();
  const formatsOf = new Map<TableName, Set<TableFormat>>();
  for (const file of options.tables) {
    const set = formatsOf.get(file.table) ?? new Set();
    set.add(file.format);
    formatsOf.set(file.table, set);
    names.take(resourceName(file.table, file.format));
  }
  return {
    profile: 'data-package',
    // Package names are lower case in the Frictionless specification.
    name: options.name.toLowerCase().replace(/[^a-z0-9._-]/g, '-'),
    title: options.title,
    description: options.description,
    created: options.created,
    ...(options.source ? { sources: [sourceOf(options.source)] } : {}),
    ...(options.privacy ? { privacy: options.privacy } : {}),
    resources: [
      ...options.tables.map((file) => tableResource(file, formatsOf.get(file.table) ?? new Set())),
      ...(options.sheets ?? []).map((sheet) => sheetResource(sheet, names.of(sheet.path))),
      ...(options.files ?? []).map((file) => fileResource(file, names.of(file.path))),
    ],
  };
}

function sourceOf(source: PackageSource) {
  return source.sandbox
    ? { title: "The sandbox: study-export's embedded reference service, with generated data" }
    : { title: `Study Responses service at ${source.base_url}`, path: source.base_url };
}

/**
 * Distinct resource names for files that are not tables: the path (media.zip, wide/x.csv), in
 * the characters a name may hold ([-a-z0-9._/]); a path that had to change gets a short hash
 * of itself, so two files never share a name.
 */
class ResourceNames {
  readonly #taken = new Set<string>();

  take(name: string): void {
    this.#taken.add(name);
  }

  of(path: string): string {
    const cleaned = path.toLowerCase().replace(/[^-a-z0-9._/]/g, '_') || '_';
    let name = cleaned === path && !this.#taken.has(cleaned) ? cleaned : `${cleaned}-${shortHash(path)}`;
    while (this.#taken.has(name)) name = `${name}-${shortHash(name)}`;
    this.#taken.add(name);
    return name;
  }
}

const shortHash = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 8);

function sizeAndHash(file: { bytes?: number; sha256?: string }) {
  return {
    ...(file.bytes !== undefined ? { bytes: file.bytes } : {}),
    ...(file.sha256 ? { hash: `sha256:${file.sha256}` } : {}),
  };
}

function tableResource(file: PackageResourceFile, formats: ReadonlySet<TableFormat>) {
  const table = tables[file.table];
  const others = [...formats].filter((format) => format !== file.format);
  const sameRows = others.map((format) => `"${resourceName(file.table, format)}" (${format})`);
  const { profile, ...besideSchema } = tableFormatNamed(file.format).resource;
  const description = table.description + (sameRows.length ? ` Same rows as ${sameRows.join(', ')}.` : '');
  if (file.path.length === 0) return emptyTableResource(file, description);
  return {
    profile,
    name: resourceName(file.table, file.format),
    table: file.table,
    path: typeof file.path === 'string' ? file.path : [...file.path],
    description,
    ...tableFormatNamed(file.format).datapackage,
    ...besideSchema,
    ...sizeAndHash(file),
    schema: schema(table, file.format, file.columns),
  };
}

/**
 * A table with no file: its rows inline, none. A package lists at least one resource and a
 * resource names at least one path, so a current/ that holds no row yet (a shard that owns no
 * study) still describes every table, and foreign keys still find the resources they name.
 */
function emptyTableResource(file: PackageResourceFile, description: string) {
  return {
    profile: 'tabular-data-resource',
    name: resourceName(file.table, file.format),
    table: file.table,
    data: [],
    description: `${description} No rows yet: no file holds this table.`,
    schema: schema(tables[file.table], file.format, file.columns),
  };
}

function schema(table: TableDeclaration, format: TableFormat, columns?: readonly string[]) {
  const declared = new Map(table.columns.map((column) => [column.name, column]));
  const held = columns ? columns.flatMap((name) => declared.get(name) ?? []) : table.columns;
  const names = new Set(held.map((column) => column.name));
  const keyHeld = (fields: readonly string[]) => fields.every((name) => names.has(name));
  return {
    fields: held.map(field),
    // An empty CSV cell is a missing value (the profile wants at least one); Parquet has real
    // nulls and shares the schema.
    missingValues: [''],
    ...(keyHeld(table.primaryKey) ? { primaryKey: [...table.primaryKey] } : {}),
    // The profile refuses an empty list: a table without references has no foreignKeys.
    ...(table.foreignKeys.some((key) => keyHeld(key.fields))
      ? {
          foreignKeys: table.foreignKeys
            .filter((key) => keyHeld(key.fields))
            .map((key) => ({
              fields: [...key.fields],
              reference: {
                resource: resourceName(key.reference.resource as TableName, format),
                fields: [...key.reference.fields],
              },
            })),
        }
      : {}),
  };
}

/** A wide sheet: tabular, its fixed columns typed, every question column text. */
function sheetResource(sheet: PackageSheet, name: string) {
  const fixed = new Map<string, (typeof wideSheet.fixed)[number]>(
    wideSheet.fixed.map((column) => [column.header, column]),
  );
  return {
    // A sheet that starts with a byte order mark (csv.bom, for old Excel) is not a tabular
    // resource: CSV readers take the mark for part of the first, quoted, cell and refuse it.
    profile: sheet.bom ? 'data-resource' : 'tabular-data-resource',
    name,
    path: sheet.path,
    description:
      `${wideSheet.description} For spreadsheets: every text cell quoted, times to the second.` +
      (sheet.bom ? ' Starts with a UTF-8 byte order mark (csv.bom), for old Excel.' : ''),
    ...wideFormat.datapackage,
    encoding: 'utf-8',
    dialect: csvDialect,
    ...sizeAndHash(sheet),
    schema: {
      fields: sheet.header.map((header, i) => {
        const column = i < wideSheet.fixed.length ? fixed.get(header) : undefined;
        if (!column) return { name: header, type: 'string', description: wideColumnDescription(header) };
        return {
          name: header,
          type: fieldTypes[column.type],
          ...(column.type === 'timestamp' ? { format: sheetTimeFormat } : {}),
          description: column.description,
          constraints: { required: column.key === 'response_id' },
        };
      }),
      missingValues: [''],
      primaryKey: ['response_id'],
    },
  };
}

/** Media types by extension: the formats' own (the registry's), then the run's other files. */
const fileTypes: Record<string, { format: string; mediatype: string; compression?: string }> = {
  zip: { format: 'zip', mediatype: 'application/zip' },
  json: { format: 'json', mediatype: 'application/json' },
  jsonl: { format: 'jsonl', mediatype: 'application/x-ndjson' },
  'jsonl.gz': { format: 'jsonl', mediatype: 'application/x-ndjson', compression: 'gz' },
  ...Object.fromEntries(
    outputFormats.filter((format) => format.selectable).map((format) => [format.name, format.datapackage]),
  ),
  md: { format: 'md', mediatype: 'text/markdown' },
  html: { format: 'html', mediatype: 'text/html' },
};

/** A file that is not a table: a data resource with its format and media type. */
function fileResource(file: PackageFile, name: string) {
  const extension = /\.(jsonl\.gz|[A-Za-z0-9]+)$/.exec(file.path)?.[1]?.toLowerCase() ?? '';
  const type = fileTypes[extension] ?? { format: extension || 'bin', mediatype: 'application/octet-stream' };
  return {
    profile: 'data-resource',
    name,
    path: file.path,
    ...(file.description ? { description: file.description } : {}),
    ...type,
    ...sizeAndHash(file),
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
