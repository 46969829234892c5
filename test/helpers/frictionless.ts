/**
 * The Frictionless Data reference library for JavaScript (`datapackage`, with `tableschema`)
 * as a strict, independent reader of a run's datapackage.json: the descriptor is validated
 * against its profile (strict mode throws on any error), and every CSV resource is read with
 * its declared schema: every cell cast, primary keys and foreign keys (relations) checked.
 */
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { hashFile } from '../../src/util/fs.ts';

interface FrictionlessResource {
  name: string;
  tabular: boolean;
  descriptor: { format?: string; path?: string | string[]; hash?: string; bytes?: number; profile?: string };
  read(options: { keyed?: boolean; relations?: boolean; forceCast?: boolean }): Promise<unknown[]>;
  rawRead(): Promise<Buffer | undefined>;
}
interface FrictionlessPackage {
  valid: boolean;
  errors: Error[];
  resources: FrictionlessResource[];
}
/** The library ships no types; the little used here. */
const { Package, Resource } = createRequire(import.meta.url)('datapackage') as {
  Package: {
    load(descriptor: string, options: { basePath: string; strict: boolean }): Promise<FrictionlessPackage>;
  };
  Resource: {
    load(descriptor: object, options: { basePath: string; strict: boolean }): Promise<FrictionlessResource>;
  };
};

export interface FrictionlessReport {
  /** Every error, named by resource and row; empty when the package is valid. */
  errors: string[];
  /** Tabular (CSV) resources read, with their row counts (all parts together). */
  read: Record<string, number>;
  /** Resources this reader cannot read as tables (Parquet, zip, workbooks, JSON), read as bytes. */
  skipped: string[];
}

/**
 * `dir` holds the package (`descriptor`, datapackage.json unless told): a run's folder, or
 * current/. Every resource is read: a tabular one
 * with its schema, every cell cast and keys checked (with relations, for a single file); a
 * resource in several parts (current/) part by part, since this reader reads no multipart
 * table and each part has its header; any other resource as bytes, against its hash.
 */
/**
 * A file resource's sha256 and length: read by the library when small; a large one (media.zip)
 * streamed here, since the library's rawRead joins its chunks one by one (minutes for 100 MB).
 */
async function fileDigest(
  part: FrictionlessResource,
  file: string,
): Promise<{ sha256: string; length: number }> {
  if ((await stat(file)).size <= 4 * 1024 * 1024) {
    const bytes = (await part.rawRead()) ?? Buffer.alloc(0);
    return { sha256: createHash('sha256').update(bytes).digest('hex'), length: bytes.length };
  }
  const { sha256, bytes } = await hashFile(file);
  return { sha256, length: bytes };
}

export async function validateDataPackage(
  dir: string,
  descriptor = 'datapackage.json',
): Promise<FrictionlessReport> {
  const report: FrictionlessReport = { errors: [], read: {}, skipped: [] };
  let pkg: FrictionlessPackage;
  try {
    pkg = await Package.load(join(dir, descriptor), { basePath: dir, strict: true });
  } catch (error) {
    report.errors.push(`descriptor: ${describe(error)}`);
    return report;
  }
  if (!pkg.valid) report.errors.push(...pkg.errors.map((e) => `descriptor: ${describe(e)}`));
  for (const resource of pkg.resources) {
    const paths = resource.descriptor.path;
    try {
      if (!resource.tabular) {
        report.skipped.push(resource.name);
        for (const path of typeof paths === 'string' ? [paths] : (paths ?? [])) {
          const part = await Resource.load({ ...resource.descriptor, path }, { basePath: dir, strict: true });
          const { sha256, length } = await fileDigest(part, join(dir, path));
          const { hash, bytes: size } = resource.descriptor;
          if (typeof paths === 'string' && hash && hash !== `sha256:${sha256}`)
            report.errors.push(`${resource.name}: ${path} does not match its hash`);
          if (typeof paths === 'string' && size !== undefined && size !== length)
            report.errors.push(`${resource.name}: ${path} has ${length} bytes, the descriptor says ${size}`);
        }
        continue;
      }
      if (typeof paths === 'string') {
        report.read[resource.name] = readRows(
          await resource.read({ keyed: true, relations: true, forceCast: true }),
          resource.name,
          report,
        );
        continue;
      }
      let rows = 0;
      for (const path of paths ?? []) {
        const part = await Resource.load({ ...resource.descriptor, path }, { basePath: dir, strict: true });
        rows += readRows(
          await part.read({ keyed: true, forceCast: true }),
          `${resource.name} (${path})`,
          report,
        );
      }
      report.read[resource.name] = rows;
    } catch (error) {
      report.errors.push(`${resource.name}: ${describe(error)}`);
    }
  }
  return report;
}

/** forceCast: every failing row comes back as an Error instead of stopping at the first. */
function readRows(rows: unknown[], name: string, report: FrictionlessReport): number {
  for (const row of rows) if (row instanceof Error) report.errors.push(`${name}: ${describe(row)}`);
  return rows.length;
}

function describe(error: unknown): string {
  const { message, errors, rowNumber } = error as { message: string; errors?: Error[]; rowNumber?: number };
  const where = rowNumber === undefined ? '' : ` (row ${rowNumber})`;
  const details = errors?.length ? `: ${errors.map((e) => e.message).join('; ')}` : '';
  return `${message}${where}${details}`;
}

/**
 * Every tabular resource of the package in `dir` (a run, or current/) read and cast by the
 * reader with its schema, part by part, as keyed rows (no relations, so every value is the
 * cell's own); a row the schema refused is an Error.
 */
export async function readTabular(dir: string): Promise<Map<string, unknown[]>> {
  const pkg = await Package.load(join(dir, 'datapackage.json'), { basePath: dir, strict: true });
  const rows = new Map<string, unknown[]>();
  for (const resource of pkg.resources.filter((r) => r.tabular)) {
    const paths = resource.descriptor.path;
    for (const path of typeof paths === 'string' ? [paths] : (paths ?? [])) {
      const part = await Resource.load({ ...resource.descriptor, path }, { basePath: dir, strict: true });
      rows.set(resource.name, [
        ...(rows.get(resource.name) ?? []),
        ...(await part.read({ keyed: true, forceCast: true })),
      ]);
    }
  }
  return rows;
}

/** One CSV file read and cast by the reader with a resource's descriptor (its schema and dialect). */
export async function readWithDescriptor(descriptor: object, dir: string, path: string): Promise<unknown[]> {
  const resource = await Resource.load({ ...descriptor, path }, { basePath: dir, strict: true });
  return resource.read({ keyed: true, forceCast: true });
}
