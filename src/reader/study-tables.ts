import { sortByKey, type TableRows, tableNames } from '../tables/index.ts';
import type { StudyReader } from './output.ts';

/**
 * Every table's rows of a study, each in key order: what a package written whole starts from
 * (a bag, a share package), the same files from the same rows whatever order the parts held.
 */
export async function studyTables(study: Pick<StudyReader, 'all'>): Promise<TableRows> {
  const rows = {} as Record<string, unknown>;
  for (const table of tableNames) rows[table] = sortByKey(table, await study.all(table));
  return rows as TableRows;
}
