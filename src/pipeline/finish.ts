/**
 * The last files of a run before its manifest: datapackage.json, which describes the tables
 * with their sizes and hashes, and the list of every file for the manifest. Sizes and hashes
 * are the ones counted while the files were written; nothing is read back.
 */
import type { PipelineConfig, TableFormat } from '../config/schema.ts';
import { dataPackage } from '../load/datapackage.ts';
import { MANIFEST_FILE, type ManifestFile } from '../load/manifest.ts';
import type { TableFiles } from '../load/table-writers.ts';
import type { RecordedStorage } from '../storage/recorded.ts';

/** Writes datapackage.json; returns every file of the run with bytes and sha256. */
export async function finishRunDirectory(
  run: RecordedStorage,
  config: PipelineConfig,
  tables: TableFiles[],
): Promise<ManifestFile[]> {
  const byPath = new Map(run.written().map((file) => [file.path, file]));
  const resources = tables.flatMap((table) =>
    table.files.map((path) => {
      const listed = byPath.get(path);
      return {
        table: table.table,
        path,
        format: (path.endsWith('.parquet') ? 'parquet' : 'csv') as TableFormat,
        bytes: listed?.bytes ?? 0,
        sha256: listed?.sha256 ?? '',
      };
    }),
  );
  const described = dataPackage({ name: config.name, formats: config.output.formats, resources });
  await run.put('datapackage.json', `${JSON.stringify(described, null, 2)}\n`);
  return run.written().filter((file) => file.path !== MANIFEST_FILE);
}
