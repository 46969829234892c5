/**
 * One study's analyst package, written into a local folder laid out as a run's files: the tidy
 * tables (CSV and Parquet), the wide sheet and the file of every other study format the output
 * writes (the workbook, …), all by output/handoff-files.ts (as a bag's), then README.md,
 * report.html and datapackage.json by the run's guides. Every file is written from the rows the
 * reader gave, never copied from current/, so whatever the reader did to the rows (a handoff's
 * de-identification) holds in every file alike.
 */
import { join } from 'node:path';
import {
  dataPackage,
  type PackageFile,
  type PackageResourceFile,
  type PackageSheet,
} from '../output/datapackage.ts';
import type { CsvOptions } from '../output/formats/csv.ts';
import { type Format, type TableFormat, tableFormats } from '../output/formats/index.ts';
import { codebookMarkdown } from '../output/guide/codebook.ts';
import { reportHtml } from '../output/guide/report-html.ts';
import {
  type HandoffFiles,
  type HandoffSource,
  type HandoffStudyFile,
  type HandoffTableFile,
  writeHandoffFiles,
} from '../output/handoff-files.ts';
import { CODEBOOK_FILE, DATAPACKAGE_FILE, REPORT_FILE } from '../output/layout.ts';
import { type HandoffPrivacy, privacyParagraphs, privacySummary } from '../privacy/index.ts';
import { LocalStorage } from '../storage/local.ts';
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
  /** The study's rows, through the handoff reader. */
  study: HandoffSource;
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

export interface StudyPackage {
  files: WrittenFile[];
  /** The responses it holds, as it names them. */
  responseIds: string[];
}

export async function writeStudyPackage(input: StudyPackageInput): Promise<StudyPackage> {
  const local = new LocalStorage(input.dir);
  const handed = await writeHandoffFiles({
    source: input.study,
    dir: input.dir,
    tablesFolder: '',
    scratchDir: input.work,
    formats: input.source.formats,
    csv: input.source.csv,
    fileName: input.name,
    ...(input.onWarning ? { onWarning: input.onWarning } : {}),
  });
  const tables = await Promise.all(
    handed.tables.map(async (file) => ({ ...file, ...(await fileFacts(input.dir, file.path)) })),
  );
  const sheets = await Promise.all(
    handed.studyFiles.map(async (file) => ({ ...file, ...(await fileFacts(input.dir, file.path)) })),
  );
  const written = [...tables, ...sheets].map(({ path, bytes, sha256 }) => ({ path, bytes, sha256 }));
  const guides = guideFiles(input, handed, written);
  for (const [path, text] of guides) await local.put(path, text);
  const guideFacts = await Promise.all(guides.map(([path]) => fileFacts(input.dir, path)));
  const descriptor = packageDescriptor(input, handed, tables, sheets, guideFacts);
  await local.put(DATAPACKAGE_FILE, `${JSON.stringify(descriptor, null, 2)}\n`);
  return {
    files: [...written, ...guideFacts, await fileFacts(input.dir, DATAPACKAGE_FILE)],
    responseIds: handed.responseIds,
  };
}

async function fileFacts(dir: string, path: string): Promise<WrittenFile> {
  const { sha256, bytes } = await hashFile(join(dir, ...path.split('/')));
  return { path, bytes, sha256 };
}

/** README.md and report.html, from the same facts. */
function guideFiles(
  input: StudyPackageInput,
  handed: HandoffFiles,
  written: readonly WrittenFile[],
): [string, string][] {
  const { source } = input;
  const study = input.study.study;
  const at = input.madeAt.toISOString();
  const common = {
    kind: 'package' as const,
    pipeline: source.pipeline,
    service: source.service,
    runId: source.runId,
    startedAt: at,
    finishedAt: at,
    privacy: {
      identified: input.privacy.identified,
      paragraphs: privacyParagraphs(input.privacy, { recordings: false }),
    },
  };
  const studies = [{ study_id: study.study_id, link_id: study.link_id, title: study.title }];
  const tableFormatNames = tableFormats.map((format) => format.name as TableFormat);
  return [
    [
      CODEBOOK_FILE,
      codebookMarkdown({
        ...common,
        studies: studies.map((s) => ({
          ...s,
          responses: handed.responseIds.length,
          since: null,
          columns: handed.columns,
        })),
        formats: [...new Set([...tableFormatNames, ...source.formats])],
        files: written.map((file) => file.path),
        alsoWritten: [REPORT_FILE, DATAPACKAGE_FILE],
      }),
    ],
    [
      REPORT_FILE,
      reportHtml({
        ...common,
        studies,
        stats: handed.stats,
        warnings: [],
        mediaEnabled: source.mediaEnabled,
      }),
    ],
  ];
}

function packageDescriptor(
  input: StudyPackageInput,
  handed: HandoffFiles,
  tables: readonly (HandoffTableFile & WrittenFile)[],
  sheets: readonly (HandoffStudyFile & WrittenFile)[],
  guides: readonly WrittenFile[],
) {
  const study = input.study.study;
  const digest = (file: WrittenFile) => ({ bytes: file.bytes, sha256: file.sha256 });
  const tableResources: PackageResourceFile[] = tables.map((file) => ({
    table: file.table,
    path: file.path,
    format: file.format,
    ...digest(file),
  }));
  const wide: PackageSheet[] = sheets.flatMap((file) =>
    file.header ? [{ path: file.path, header: file.header, bom: input.source.csv.bom, ...digest(file) }] : [],
  );
  const files: PackageFile[] = [
    ...sheets.filter((sheet) => !sheet.header).map((file) => ({ path: file.path, ...digest(file) })),
    ...guides.map((file) => ({ path: file.path, ...digest(file) })),
  ];
  return dataPackage({
    name: `${input.source.pipeline}-${study.link_id}`,
    title: study.title,
    description: `One study exported by study-export: ${handed.responseIds.length} responses, as the output's current dataset held them after run ${input.source.runId}. Privacy: ${privacySummary(input.privacy, { recordings: false })} (see privacy).`,
    created: input.madeAt.toISOString(),
    ...(input.source.service ? { source: { base_url: input.source.service, sandbox: false } } : {}),
    tables: tableResources,
    sheets: wide,
    files,
    privacy: input.privacy,
  });
}
