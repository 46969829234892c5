/** Reading the current dataset back the way an analyst does: DuckDB over the hive partitions. */
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { type TableName, tableNames, tables } from '../../src/tables/index.ts';
import { withTempDir } from './environment.ts';
import { duckdb, readCsv } from './readers.ts';
import { runAgainst, sandboxConfig } from './run.ts';

/** Every row of every table of current/ (or of a run's files), sorted by primary key, as JSON text. */
export async function currentTables(
  root: string,
  layout: 'current' | 'run' = 'current',
): Promise<Record<TableName, string[]>> {
  return duckdb(async (query) => {
    const result = {} as Record<TableName, string[]>;
    for (const table of tableNames) {
      const source =
        layout === 'current'
          ? `read_parquet('${join(root, table)}/*/*.parquet', hive_partitioning = true)`
          : `read_parquet('${join(root, `${table}.parquet`)}')`;
      const columns = tables[table].columns.map((column) => `"${column.name}"`).join(', ');
      const order = tables[table].primaryKey.map((key) => `"${key}"`).join(', ');
      const rows = await query(`select ${columns} from ${source} order by ${order}`).catch((error: Error) => {
        // No partition yet: DuckDB finds no file for the pattern.
        if (/No files found/.test(error.message)) return [];
        throw error;
      });
      result[table] = rows.map((row) =>
        JSON.stringify(row, (_key, value) => (typeof value === 'bigint' ? Number(value) : value)),
      );
    }
    return result;
  });
}

/** The file names in each partition of a table of current/. */
export async function partitions(currentDir: string, table: TableName): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  let names: string[];
  try {
    names = await readdir(join(currentDir, table));
  } catch {
    return out;
  }
  for (const name of names) out[name] = (await readdir(join(currentDir, table, name))).sort();
  return out;
}

/**
 * Every CSV part of current/, by table and bucket, as its header and its records in order
 * (names differ by run id, contents must not; a bucket's studies come in the order its run
 * finished them, so the records are sorted).
 */
export async function csvParts(currentDir: string): Promise<Record<string, string[][]>> {
  const parts: Record<string, string[][]> = {};
  for (const table of tableNames) {
    for (const [bucket, names] of Object.entries(await partitions(currentDir, table))) {
      for (const name of names.filter((n) => n.endsWith('.csv'))) {
        const [header = [], ...records] = (await readCsv(join(currentDir, table, bucket, name))).records;
        parts[`${table}/${bucket}`] = [
          header,
          ...records.sort((a, b) => (a.join('\u0000') < b.join('\u0000') ? -1 : 1)),
        ];
      }
    }
  }
  return parts;
}

/**
 * What an analyst's DuckDB (hive partitioning on) finds in current/: the response ids, each
 * as often as it is there, and per table the primary keys that are there more than once.
 */
export async function currentKeys(
  currentDir: string,
): Promise<{ responseIds: string[]; repeated: Record<TableName, number> }> {
  return duckdb(async (query) => {
    const repeated = {} as Record<TableName, number>;
    const source = (table: TableName) =>
      `read_parquet('${join(currentDir, table)}/*/*.parquet', hive_partitioning = true)`;
    for (const table of tableNames) {
      const key = tables[table].primaryKey.map((column) => `"${column}"`).join(', ');
      const rows = await query(
        `select count(*) as n from (select ${key} from ${source(table)} group by ${key} having count(*) > 1)`,
      ).catch((error: Error) => {
        if (/No files found/.test(error.message)) return [{ n: 0 }];
        throw error;
      });
      repeated[table] = Number(rows[0]?.n ?? 0);
    }
    const ids = await query(`select response_id from ${source('responses')} order by response_id`);
    return { responseIds: ids.map((row) => String(row.response_id)), repeated };
  });
}

/** A fresh, full export of the sandbox as it is now, into its own folder: the expected current. */
export async function freshExport(sandbox: Sandbox): Promise<Awaited<ReturnType<typeof currentTables>>> {
  return withTempDir(async (fresh) => {
    const result = await runAgainst(
      sandbox,
      sandboxConfig(sandbox, fresh, { output: { formats: ['parquet'] } }),
    );
    return currentTables(result.runDir!, 'run');
  });
}

/**
 * current/'s tables as the earlier layout had them: a folder per study, study_id=<folderOf(id)>,
 * whose Parquet and CSV parts (written by DuckDB) hold that study's rows of each bucket's part,
 * under the part's run id; the Parquet parts without study_id unless `holdStudyId` (the older
 * rule's held it). `keep`: bucket folders left in place, as a move stopped half way leaves them.
 */
export async function toStudyFolders(
  current: string,
  options: {
    folderOf: (studyId: string) => string;
    holdStudyId: boolean;
    keep?: (table: TableName, bucket: string) => boolean;
  },
): Promise<void> {
  for (const table of tableNames) {
    for (const bucket of await readdir(join(current, table))) {
      if (!bucket.startsWith('bucket=')) continue;
      const parts = await readdir(join(current, table, bucket));
      const parquet = parts.find((name) => name.endsWith('.parquet'));
      if (parquet === undefined) continue;
      const runId = parquet.slice('part-'.length, -'.parquet'.length);
      const path = join(current, table, bucket, parquet);
      await duckdb(async (query) => {
        const ids = await query(
          `select distinct study_id from read_parquet('${path}', hive_partitioning = false)`,
        );
        for (const { study_id: id } of ids as { study_id: string }[]) {
          const folder = join(current, table, `study_id=${options.folderOf(id)}`);
          await mkdir(folder, { recursive: true });
          const where = `where study_id = '${id.replaceAll("'", "''")}'`;
          const columns = options.holdStudyId ? '*' : '* exclude (study_id)';
          const from = `from read_parquet('${path}', hive_partitioning = false)`;
          await query(
            `copy (select ${columns} ${from} ${where}) to '${join(folder, `part-${runId}.parquet`)}' (format parquet)`,
          );
          await query(
            `copy (select * ${from} ${where}) to '${join(folder, `part-${runId}.csv`)}' (format csv, header)`,
          );
        }
      });
      if (!options.keep?.(table, bucket)) await rm(join(current, table, bucket), { recursive: true });
    }
  }
}
