/**
 * The last files of a run: datapackage.json, which describes the tables with their sizes
 * and hashes, and the list of every file for the manifest.
 */
import { join, relative, sep } from 'node:path';
import type { PipelineConfig, TableFormat } from '../config/schema.ts';
import { dataPackage } from '../load/datapackage.ts';
import { listRunFiles, type ManifestFile } from '../load/manifest.ts';
import type { TableFiles } from '../load/table-writers.ts';
import { hashFile, writeFileAtomic } from '../util/fs.ts';

/** Writes datapackage.json; returns every file of the run with bytes and sha256. */
export async function finishRunDirectory(
  dir: string,
  config: PipelineConfig,
  tables: TableFiles[],
): Promise<ManifestFile[]> {
  const files = await listRunFiles(dir);
  const byPath = new Map(files.map((file) => [file.path, file]));
  const resources = tables.flatMap((table) =>
    table.files.map((file) => {
      const path = relative(dir, file).split(sep).join('/');
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
  const dataPackagePath = join(dir, 'datapackage.json');
  const described = dataPackage({ name: config.name, formats: config.output.formats, resources });
  await writeFileAtomic(dataPackagePath, `${JSON.stringify(described, null, 2)}\n`);
  return [...files, { path: 'datapackage.json', ...(await hashFile(dataPackagePath)) }];
}
