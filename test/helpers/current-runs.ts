/**
 * A run's rows of one study put into current/ through its door, as a run does: staged
 * (CurrentStaging), the bucket prepared once the study ends (CurrentPreparation), published
 * (publishCurrent) and settled once committed (settleCurrent); and a study's rows read back
 * from the newest parts.
 */
import { join } from 'node:path';
import { bucketOf } from '../../src/buckets.ts';
import {
  type CurrentContext,
  type CurrentOutput,
  CurrentPreparation,
  CurrentStaging,
  newestPart,
  type PreparedBucket,
  partitionPath,
  publishCurrent,
  settleCurrent,
} from '../../src/current/index.ts';
import { readPart } from '../../src/output/formats/parquet-read.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { type DataTableName, type TableRows, tableNames } from '../../src/tables/index.ts';

/** current/ of an output in `dir`/out, its parts prepared in `dir`, in Parquet and CSV. */
export function currentOutputIn(dir: string): CurrentOutput {
  return {
    store: new LocalStorage(join(dir, 'out')),
    name: 'test',
    formats: ['parquet', 'csv'],
    csv: { bom: false, escape_formulae: true },
    scratchDir: dir,
  };
}

export interface StudyRun {
  runId: string;
  studyId: string;
  /** The run's rows of the study, table by table (a table left out: none). */
  rows: Partial<TableRows>;
  /** Where the study's export started (null: a full export). */
  since?: string | null;
  /** The export lost nothing (default true): a full lossless export replaces the study. */
  lossless?: boolean;
  /** Responses whose detail could not be fetched: their copy is incomplete. */
  incomplete?: readonly string[];
  /** Responses the service no longer lists (a reconcile). */
  removed?: ReadonlySet<string>;
}

/** The run's study staged and its bucket prepared, not yet published. */
export async function prepareStudyRun(
  output: CurrentOutput,
  run: StudyRun,
): Promise<{ context: CurrentContext; prepared: PreparedBucket[] }> {
  const context: CurrentContext = {
    ...output,
    runId: run.runId,
    staging: await CurrentStaging.open(join(output.scratchDir, `staging-${run.runId}`)),
  };
  const preparation = new CurrentPreparation(context, [run.studyId]);
  // Not begun (CurrentPreparation.begin): a bucket's first parts are merged from the staged rows,
  // as they are for a run whose writers take no copy.
  const stage = context.staging.forStudy(run.studyId);
  const write = <T extends DataTableName>(table: T) => stage.write(table, run.rows[table] ?? []);
  for (const table of tableNames) await write(table);
  for (const id of run.incomplete ?? []) stage.markIncomplete(id);
  await stage.close();
  preparation.endsBucket(run.studyId);
  preparation.add({
    study_id: run.studyId,
    since: run.since ?? null,
    lossless: run.lossless ?? true,
    responses: run.rows.responses?.length ?? 0,
    ...(run.removed ? { removed: run.removed } : {}),
  });
  return { context, prepared: await preparation.done() };
}

/** The run's study put into current/: published, and settled unless `settle` is false. */
export async function publishStudyRun(
  output: CurrentOutput,
  run: StudyRun,
  settle = true,
): Promise<PreparedBucket[]> {
  const { context, prepared } = await prepareStudyRun(output, run);
  await publishCurrent(context, prepared);
  if (settle) await settleCurrent(context, prepared);
  return prepared;
}

/** The file names in the partition of `table` that holds `studyId`, sorted. */
export async function partitionFiles(output: CurrentOutput, table: DataTableName, studyId: string) {
  const names: string[] = [];
  for await (const file of output.store.list(partitionPath(table, bucketOf(studyId)))) names.push(file.path);
  return names.sort();
}

/** The study's rows of every table, as the newest part of each partition holds them. */
export async function currentStudyRows(output: CurrentOutput, studyId: string): Promise<TableRows> {
  const rows = {} as Record<DataTableName, unknown[]>;
  for (const table of tableNames) {
    const folder = partitionPath(table, bucketOf(studyId));
    const newest = newestPart(await partitionFiles(output, table, studyId));
    rows[table] = [];
    if (newest === null) continue;
    const path = `${folder}/${newest}`;
    const bytes = (await output.store.read(path))?.length ?? 0;
    for await (const group of readPart(output.store, path, bytes, table))
      rows[table].push(...group.filter((row) => row.study_id === studyId));
  }
  return rows as TableRows;
}
