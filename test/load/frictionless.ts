/**
 * The Frictionless Data reference library for JavaScript (`datapackage`, with `tableschema`)
 * as a strict, independent reader of a run's datapackage.json: the descriptor is validated
 * against its profile (strict mode throws on any error), and every CSV resource is read with
 * its declared schema: every cell cast, primary keys and foreign keys (relations) checked.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';

interface FrictionlessResource {
  name: string;
  descriptor: { format?: string };
  read(options: { keyed?: boolean; relations?: boolean; forceCast?: boolean }): Promise<unknown[]>;
}
interface FrictionlessPackage {
  valid: boolean;
  errors: Error[];
  resources: FrictionlessResource[];
}
/** The library ships no types; the little used here. */
const { Package } = createRequire(import.meta.url)('datapackage') as {
  Package: {
    load(descriptor: string, options: { basePath: string; strict: boolean }): Promise<FrictionlessPackage>;
  };
};

export interface FrictionlessReport {
  /** Every error, named by resource and row; empty when the package is valid. */
  errors: string[];
  /** CSV resources read, with their row counts. */
  read: Record<string, number>;
  /** Resources this reader cannot read (Parquet), skipped as the specification allows. */
  skipped: string[];
}

export async function validateDataPackage(runDir: string): Promise<FrictionlessReport> {
  const report: FrictionlessReport = { errors: [], read: {}, skipped: [] };
  let pkg: FrictionlessPackage;
  try {
    pkg = await Package.load(join(runDir, 'datapackage.json'), { basePath: runDir, strict: true });
  } catch (error) {
    report.errors.push(`descriptor: ${describe(error)}`);
    return report;
  }
  if (!pkg.valid) report.errors.push(...pkg.errors.map((e) => `descriptor: ${describe(e)}`));
  for (const resource of pkg.resources) {
    if (resource.descriptor.format !== 'csv') {
      report.skipped.push(resource.name);
      continue;
    }
    try {
      // forceCast: every failing row comes back as an Error instead of stopping at the first.
      const rows = await resource.read({ keyed: true, relations: true, forceCast: true });
      for (const row of rows)
        if (row instanceof Error) report.errors.push(`${resource.name}: ${describe(row)}`);
      report.read[resource.name] = rows.length;
    } catch (error) {
      report.errors.push(`${resource.name}: ${describe(error)}`);
    }
  }
  return report;
}

function describe(error: unknown): string {
  const { message, errors, rowNumber } = error as { message: string; errors?: Error[]; rowNumber?: number };
  const where = rowNumber === undefined ? '' : ` (row ${rowNumber})`;
  const details = errors?.length ? `: ${errors.map((e) => e.message).join('; ')}` : '';
  return `${message}${where}${details}`;
}
