/**
 * current/datapackage.json: every file of the current dataset as a Frictionless Data Package,
 * from the same builder as a run's, rewritten at each publication from a listing of current/:
 * each table resource lists every part it has now (one per bucket, a partition's newest), in
 * the columns the parts hold (read from one part, so the descriptor follows the parts'
 * layout); the wide sheets are tabular resources with their headers, the workbooks files.
 * There are no sizes or hashes (each run's manifest has those of the files it wrote).
 *
 * Each CSV part has its own header row, as DuckDB, pandas and Spark read a folder of parts; a
 * reader that joins a resource's files end to end must skip the header of every file after the
 * first.
 */
import type { Format, TableFormat } from '../config/schema.ts';
import { dataPackage, type PackageSource, packageNotes } from '../output/datapackage.ts';
import { csvHeader } from '../output/formats/csv.ts';
import { studyFormats, tableFormatNamed, tableFormatsToRead } from '../output/formats/index.ts';
import {
  CODEBOOK_FILE,
  CURRENT_DIR,
  DATAPACKAGE_FILE,
  REPORT_FILE,
  shardOfCurrentDescriptor,
} from '../output/layout.ts';
import { redact } from '../redact.ts';
import { compareRunIds } from '../run-id.ts';
import { type TableName, tableNames } from '../tables/index.ts';
import { parsePartName } from './parts.ts';
import type { CurrentStore } from './store.ts';

/**
 * A study's sheet: <folder>/study_id=<id>/<name><extension> of a study format every run writes
 * (the wide sheet, a CSV described by its header).
 */
function isSheet(path: string): boolean {
  const [top, folder, name, ...deeper] = path.split('/');
  return studyFormats.some(
    (format) =>
      !format.selectable &&
      format.folder === top &&
      folder !== undefined &&
      name?.endsWith(format.extension) === true &&
      deeper.length === 0,
  );
}

/** current/'s guide (guide.ts), rewritten after each descriptor. */
const rewrittenAfter = new Set([CODEBOOK_FILE, REPORT_FILE]);

/**
 * The table formats of the current dataset: the one its merges read always (currentStore),
 * first, then the others asked for.
 */
export function currentFormats(formats: readonly Format[]): TableFormat[] {
  return tableFormatsToRead
    .filter((format) => format.currentStore || formats.includes(format.name as Format))
    .map((format) => format.name as TableFormat);
}

/** What a descriptor of current/ covers: all of it, or the files `keep` accepts (one shard's). */
export interface PackageScope {
  /** Paths under current/ the descriptor may name; all when absent. */
  keep?: (path: string) => boolean;
  /** What the package's description adds about what it covers. */
  note?: string;
  /** The `covers` property: which buckets, as of which runs. */
  covers: { buckets: 'all' | string[]; runs: Record<string, string | null> };
}

/** The descriptor of current/ as it is in `store` now (the part of it `scope` keeps). */
export async function currentPackage(
  store: CurrentStore,
  options: { name: string; formats: readonly Format[]; baseUrl?: string; scope?: PackageScope },
) {
  const files: { path: string; bytes: number }[] = [];
  const keep = options.scope?.keep ?? (() => true);
  for await (const file of store.list(CURRENT_DIR)) {
    if (keep(file.path)) files.push({ path: file.path, bytes: file.bytes });
  }
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

  const tables = [];
  const taken = new Set<string>([DATAPACKAGE_FILE]);
  for (const format of currentFormats(options.formats)) {
    for (const table of tableNames) {
      const parts = newestParts(files, table, format);
      if (parts.length === 0) {
        tables.push({ table, format, path: [] });
        continue;
      }
      for (const part of parts) taken.add(part.path);
      const first = parts[0] as { path: string; bytes: number };
      const columns = await tableFormatNamed(format).columns(
        store,
        `${CURRENT_DIR}/${first.path}`,
        first.bytes,
      );
      tables.push({ table, format, path: parts.map((part) => part.path), columns });
    }
  }
  const sheets = [];
  for (const file of files) {
    if (!isSheet(file.path)) continue;
    taken.add(file.path);
    sheets.push({ path: file.path, ...(await csvHeader(store, `${CURRENT_DIR}/${file.path}`, file.bytes)) });
  }
  const others = files
    .filter((file) => !taken.has(file.path) && !leftOut(file.path))
    .map((file) => ({
      path: file.path,
      // The guide (README.md, report.html) is written again after this descriptor: no size.
      ...(rewrittenAfter.has(file.path) ? {} : { bytes: file.bytes }),
      ...describedFile(file.path),
    }));
  const source: PackageSource | undefined =
    options.baseUrl === undefined
      ? undefined
      : { base_url: redact(options.baseUrl), sandbox: options.baseUrl === 'sandbox' };
  const note = options.scope?.note ? ` ${options.scope.note}` : '';
  const described = dataPackage({
    name: options.name,
    title: `${options.name}: the current dataset of study-export`,
    description: `Every response once, its newest copy, across the runs of the pipeline "${options.name}"; one part per bucket of studies and table.${note} ${packageNotes}`,
    created: new Date().toISOString(),
    ...(source ? { source } : {}),
    tables,
    sheets,
    files: others,
  });
  return options.scope ? { ...described, covers: options.scope.covers } : described;
}

/** What a study's file that is not its wide sheet holds (the workbook, the SPSS and Stata files). */
function describedFile(path: string): { description?: string } {
  if (path.startsWith('xlsx/'))
    return {
      description:
        'The workbook of one study, from its current rows: sheets About, wide, answers and transcript (times UTC).',
    };
  const format = studyFormats.find(
    (candidate) => candidate.selectable && path.startsWith(`${candidate.folder}/`),
  );
  return format ? { description: format.description } : {};
}

/** A partition's newest part in `format` (by run id, as the merge reads them), for every partition. */
function newestParts(
  files: readonly { path: string; bytes: number }[],
  table: TableName,
  format: TableFormat,
) {
  const newest = new Map<string, { path: string; bytes: number; runId: string }>();
  for (const file of files) {
    const [folder, partition, name, ...rest] = file.path.split('/');
    if (folder !== table || rest.length > 0 || !partition?.includes('=') || !name) continue;
    const part = parsePartName(name);
    if (!part || part.format !== format) continue;
    const seen = newest.get(partition);
    if (!seen || compareRunIds(seen.runId, part.runId) < 0)
      newest.set(partition, { ...file, runId: part.runId });
  }
  return [...newest.values()].map(({ path, bytes }) => ({ path, bytes }));
}

/**
 * Files under temporary names, every file of a table's folders that is not a newest part, and
 * the shards' descriptors (each rewritten by its shard, so no size of theirs stays true).
 */
function leftOut(path: string): boolean {
  const name = path.slice(path.lastIndexOf('/') + 1);
  return (
    name.startsWith('.') ||
    shardOfCurrentDescriptor(path) !== null ||
    (tableNames as string[]).includes(path.split('/')[0] ?? '')
  );
}
