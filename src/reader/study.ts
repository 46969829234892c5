/** What a study's packages start from: its rows of every table, and the runs they came from. */
import { sortByKey, type TableRows, tableNames } from '../tables/index.ts';
import type { StudyReader } from './output.ts';
import type { RunReader } from './run.ts';

/**
 * Every table's rows of a study, each in key order: what a package written whole starts from
 * (a bag, a share package), the same files from the same rows whatever order the parts held.
 */
export async function studyTables(study: Pick<StudyReader, 'all'>): Promise<TableRows> {
  const rows = {} as Record<string, unknown>;
  for (const table of tableNames) rows[table] = sortByKey(table, await study.all(table));
  return rows as TableRows;
}

/** The runs that exported the study, oldest first (their manifests list it). */
export function studyRuns(runs: readonly RunReader[], studyId: string): RunReader[] {
  return runs.filter((run) => run.manifest.studies?.some((study) => study.study_id === studyId)).reverse();
}
