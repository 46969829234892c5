/**
 * The last files of a run before its manifest: datapackage.json, which describes every file
 * of the run (the tables with their schemas, sizes and hashes; the wide sheets with theirs;
 * media.zip, the workbooks, raw/, rejects and the manifest as files with a media type), and
 * the list of every file for the manifest. Sizes and hashes are the ones counted while the
 * files were written; nothing is read back.
 */
import type { PipelineConfig } from '../config/schema.ts';
import { dataPackage, type PackageFile, packageNotes } from '../output/datapackage.ts';
import { studyFormats, tableFormatOfFile } from '../output/formats/index.ts';
import { DATAPACKAGE_FILE, MANIFEST_FILE, MEDIA_ZIP, RAW_DIR, REJECTS_FILE } from '../output/layout.ts';
import type { ManifestFile } from '../output/manifest.ts';
import type { TableFiles } from '../output/table-writers.ts';
import type { WideColumn } from '../records.ts';
import { redact } from '../redact.ts';
import type { RecordedStorage } from '../storage/recorded.ts';

/** A wide sheet the run wrote, with its header. */
export interface WrittenSheet {
  path: string;
  header: readonly string[];
  study_id?: string;
  /** Its question and attribute columns (the codebook names the variables made of them). */
  columns?: readonly WideColumn[];
}

/** What a reader of the descriptor is told about the files that are not tables. */
function describeFile(path: string): string | undefined {
  if (path === MEDIA_ZIP)
    return 'The recordings, as <link_id>/<response_id>/<turn>-<kind>.<ext>; the media table lists each with its sha256.';
  if (path === MANIFEST_FILE)
    return 'What the run did: its configuration without secrets, counts, the sha256 of every other file, requests, warnings, timings. Written after this descriptor, so without a size or hash here.';
  if (path === REJECTS_FILE) return 'Records that failed validation, as received, with the reason.';
  if (path.startsWith(`${RAW_DIR}/`))
    return 'Every payload as received from the service, for replay and audit.';
  return studyFormats.find((format) => format.selectable && path.startsWith(`${format.folder}/`))
    ?.description;
}

/** Writes datapackage.json; returns every file of the run with bytes and sha256. */
export async function finishRunDirectory(
  run: RecordedStorage,
  config: PipelineConfig,
  tables: TableFiles[],
  options: { runId: string; sheets: readonly WrittenSheet[] },
): Promise<ManifestFile[]> {
  const written = run.written();
  const byPath = new Map(written.map((file) => [file.path, file]));
  const described = new Set<string>([DATAPACKAGE_FILE, MANIFEST_FILE]);
  const tableFiles = tables.flatMap((table) =>
    table.files.map((path) => {
      described.add(path);
      const listed = byPath.get(path);
      return {
        table: table.table,
        path,
        format: tableFormatOfFile(table.table, path),
        bytes: listed?.bytes ?? 0,
        sha256: listed?.sha256 ?? '',
      };
    }),
  );
  const sheets = options.sheets
    .filter((sheet) => byPath.has(sheet.path))
    .map((sheet) => {
      described.add(sheet.path);
      const listed = byPath.get(sheet.path);
      return { ...sheet, bom: config.output.csv.bom, bytes: listed?.bytes, sha256: listed?.sha256 };
    });
  const files: PackageFile[] = [
    ...written
      .filter((file) => !described.has(file.path))
      .map((file) => ({ ...file, description: describeFile(file.path) })),
    { path: MANIFEST_FILE, description: describeFile(MANIFEST_FILE) },
  ];
  const baseUrl = config.source.base_url;
  const pkg = dataPackage({
    name: config.name,
    title: `${config.name}: study-export run ${options.runId}`,
    description: `Every file of one study-export run of the pipeline "${config.name}". ${packageNotes}`,
    created: new Date().toISOString(),
    source: { base_url: redact(baseUrl), sandbox: baseUrl === 'sandbox' },
    tables: tableFiles,
    sheets,
    files,
  });
  await run.put(DATAPACKAGE_FILE, `${JSON.stringify(pkg, null, 2)}\n`);
  return run.written().filter((file) => file.path !== MANIFEST_FILE);
}
