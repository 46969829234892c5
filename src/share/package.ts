/**
 * One study's analyst package, written into a local folder laid out as a run's files: the tidy
 * tables (CSV and Parquet) by the run's table writers, the wide sheet and the file of every
 * other study format the output writes (the workbook, …) by the format registry's writers,
 * README.md, report.html and datapackage.json by the run's guides. Every file is written from
 * the rows the reader gave, never copied from current/, so whatever the reader did to the rows
 * (a handoff's de-identification) holds in every file alike.
 */
import { join } from 'node:path';
import type { Format, TableFormat } from '../config/schema.ts';
import { codebookMarkdown } from '../load/codebook.ts';
import {
  dataPackage,
  type PackageFile,
  type PackageResourceFile,
  type PackageSheet,
} from '../load/datapackage.ts';
import { reportHtml } from '../load/report-html.ts';
import { RunStats } from '../load/run-stats.ts';
import { createTableWriters } from '../load/table-writers.ts';
import type { CsvOptions } from '../output/formats/csv.ts';
import {
  tableFormats as registeredTableFormats,
  studyFormatsOf,
  tableFormatOfFile,
} from '../output/formats/index.ts';
import { wideFormat } from '../output/formats/wide.ts';
import { CODEBOOK_FILE, DATAPACKAGE_FILE, REPORT_FILE } from '../output/layout.ts';
import { type HandoffPrivacy, privacySummary } from '../privacy/index.ts';
import { byResponse } from '../reader/index.ts';
import { LocalStorage } from '../storage/local.ts';
import { type Row, type TableName, type TableRows, tableNames } from '../tables/index.ts';
import { AttributeKeys, WideRowBuilder, wideColumns } from '../transform/wide.ts';
import { hashFile } from '../util/fs.ts';

/** What a package says of where its rows came from. */
export interface PackageSource {
  pipeline: string;
  /** The service's base URL as the run recorded it (never a key), or "sandbox". */
  service: string;
  /** The newest run that exported the study. */
  runId: string;
  /** The output's formats: each study format among them (xlsx, …) adds its file, beside the wide sheet. */
  formats: readonly Format[];
  csv: CsvOptions;
  mediaEnabled: boolean;
}

export interface StudyPackageInput {
  rows: TableRows;
  /** The study's file name (src/names.ts): its wide sheet's and workbook's. */
  name: string;
  source: PackageSource;
  /** How the reader handed the rows over: identified, or de-identified by a profile. */
  privacy: HandoffPrivacy;
  /** The local folder the package is written into (empty). */
  dir: string;
  /** A local folder of the package's own for spills. */
  work: string;
  /** When the package is made (its guides' time). */
  madeAt: Date;
  /** A warning of the study's (a workbook's cell cut to fit), in words. */
  onWarning?: (message: string) => void;
}

/** A file of the package: its path in the package, size and sha256. */
export interface WrittenFile {
  path: string;
  bytes: number;
  sha256: string;
}

/**
 * Every table format of the registry, whatever the output's formats: an analyst's package opens
 * in a spreadsheet (CSV) and in DuckDB (Parquet) alike.
 */
const tableFormats = registeredTableFormats.map((format) => format.name as TableFormat);

export async function writeStudyPackage(input: StudyPackageInput): Promise<WrittenFile[]> {
  const local = new LocalStorage(input.dir);
  const tables = await writeTables(local, input);
  const sheets = await writeStudyFiles(local, input);
  const written = [...tables, ...sheets.map((sheet) => sheet.file)];
  const guides = guideFiles(input, written);
  for (const [path, text] of guides) await local.put(path, text);
  const guideFacts = await Promise.all(guides.map(([path]) => fileFacts(input.dir, path)));
  const descriptor = packageDescriptor(input, tables, sheets, guideFacts);
  await local.put(DATAPACKAGE_FILE, `${JSON.stringify(descriptor, null, 2)}\n`);
  return [...written, ...guideFacts, await fileFacts(input.dir, DATAPACKAGE_FILE)];
}

async function fileFacts(dir: string, path: string): Promise<WrittenFile> {
  const { sha256, bytes } = await hashFile(join(dir, ...path.split('/')));
  return { path, bytes, sha256 };
}

type TableFile = WrittenFile & { table: TableName; format: TableFormat };

/** Every data table in every table format (<table>.csv, …), with its header even without rows. */
async function writeTables(local: LocalStorage, input: StudyPackageInput): Promise<TableFile[]> {
  // Tables carry no byte order mark (csv.bom is for the sheets): table readers take it for a name.
  const writers = await createTableWriters(local, {
    formats: tableFormats,
    csv: { ...input.source.csv, bom: false },
    // The service's data only: what a run records of itself (deletions) is not the study's.
    tables: tableNames,
  });
  try {
    for (const table of tableNames) await writers.write(table, input.rows[table] as Row<typeof table>[]);
  } catch (error) {
    await writers.abort();
    throw error;
  }
  const files: TableFile[] = [];
  for (const { table, files: paths } of await writers.close())
    for (const path of paths)
      files.push({
        ...(await fileFacts(input.dir, path)),
        table,
        format: tableFormatOfFile(table, path),
      });
  return files;
}

interface StudyFile {
  file: WrittenFile;
  /** The wide sheet's header as written; null for any other study format's file. */
  header: readonly string[] | null;
}

/**
 * The study's file in each study format of the registry the output writes (the wide sheet
 * always; the workbook, … when among its formats), by the run's own writers: a response at a
 * time, in response_id order (so a workbook's answers and transcript sheets follow the tables'
 * key order), each file once the columns are known.
 */
async function writeStudyFiles(local: LocalStorage, input: StudyPackageInput): Promise<StudyFile[]> {
  const { rows, name, work } = input;
  const study = rows.studies[0];
  const keys = new AttributeKeys();
  const builder = new WideRowBuilder(keys);
  for (const answer of rows.answers) builder.answer(answer);
  for (const attribute of rows.attributes) builder.attribute(attribute);
  const formats = studyFormatsOf(input.source.formats);
  const writers = formats.map((format) =>
    format.open({
      storage: local,
      scratchDir: work,
      study: { id: study?.study_id ?? '', link_id: study?.link_id ?? name, title: study?.title ?? '' },
      fileName: name,
      csv: input.source.csv,
      warn: (_code, message) => input.onWarning?.(message),
    }),
  );
  try {
    const answers = byResponse(rows.answers);
    const transcript = byResponse(rows.transcript);
    for (const response of rows.responses) {
      const wide = builder.row(response);
      const own = {
        wide,
        answers: answers.get(response.response_id) ?? [],
        transcript: transcript.get(response.response_id) ?? [],
      };
      for (const writer of writers) await writer.add(own);
    }
    const columns = wideColumns(rows.questions, keys.chosen().keys);
    const files: StudyFile[] = [];
    for (const [i, writer] of writers.entries()) {
      const { path, header } = await writer.finish(columns);
      const sheet = formats[i] === wideFormat && header ? [...header] : null;
      files.push({ file: await fileFacts(input.dir, path), header: sheet });
    }
    return files;
  } catch (error) {
    for (const writer of writers) await writer.abort();
    throw error;
  }
}

/** README.md and report.html, from the same facts. */
function guideFiles(input: StudyPackageInput, written: readonly WrittenFile[]): [string, string][] {
  const { rows, source } = input;
  const study = rows.studies[0];
  const at = input.madeAt.toISOString();
  const common = {
    kind: 'package' as const,
    pipeline: source.pipeline,
    service: source.service,
    runId: source.runId,
    startedAt: at,
    finishedAt: at,
    privacy: input.privacy,
  };
  const studies = study ? [{ study_id: study.study_id, link_id: study.link_id, title: study.title }] : [];
  const stats = new RunStats();
  for (const table of tableNames) stats.add(table, rows[table] as Row<typeof table>[]);
  return [
    [
      CODEBOOK_FILE,
      codebookMarkdown({
        ...common,
        studies: studies.map((s) => ({ ...s, responses: rows.responses.length, since: null })),
        formats: [...new Set([...tableFormats, ...source.formats])],
        files: written.map((file) => file.path),
        alsoWritten: [REPORT_FILE, DATAPACKAGE_FILE],
      }),
    ],
    [REPORT_FILE, reportHtml({ ...common, studies, stats, warnings: [], mediaEnabled: source.mediaEnabled })],
  ];
}

function packageDescriptor(
  input: StudyPackageInput,
  tables: readonly TableFile[],
  sheets: readonly StudyFile[],
  guides: readonly WrittenFile[],
) {
  const study = input.rows.studies[0];
  const digest = (file: WrittenFile) => ({ bytes: file.bytes, sha256: file.sha256 });
  const tableResources: PackageResourceFile[] = tables.map((file) => ({
    table: file.table,
    path: file.path,
    format: file.format,
    ...digest(file),
  }));
  const wide: PackageSheet[] = sheets.flatMap(({ file, header }) =>
    header ? [{ path: file.path, header, bom: input.source.csv.bom, ...digest(file) }] : [],
  );
  const files: PackageFile[] = [
    ...sheets.filter((sheet) => !sheet.header).map(({ file }) => ({ path: file.path, ...digest(file) })),
    ...guides.map((file) => ({ path: file.path, ...digest(file) })),
  ];
  return dataPackage({
    name: `${input.source.pipeline}-${study?.link_id ?? input.name}`,
    title: study?.title ?? '',
    description: `One study exported by study-export: ${input.rows.responses.length} responses, as the output's current dataset held them after run ${input.source.runId}. Privacy: ${privacySummary(input.privacy, { recordings: false })} (see privacy).`,
    created: input.madeAt.toISOString(),
    tables: tableResources,
    sheets: wide,
    files,
    privacy: input.privacy,
  });
}
