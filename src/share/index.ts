/**
 * `study-export share`: each chosen study of an output, local or s3://, as the analyst's
 * package (docs/share.md): its rows from current/, read through the output reader (src/reader),
 * as tables, wide sheet, workbook, codebook, report and datapackage.json, into a folder or a
 * bucket, as a folder or one zip per study. Of the output, only its ledger (handoffs/) is
 * written, a record per package; runs/, current/ and state/ stay as they were. Every package is
 * checked to be absent before the first is written, so a refusal writes nothing.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../errors.ts';
import { appendHandoff } from '../ledger/index.ts';
import { studyFileNames } from '../names.ts';
import { defaultFormats, type Format } from '../output/formats/index.ts';
import { CURRENT_DIR } from '../output/layout.ts';
import type { LinkageEntry } from '../privacy/index.ts';
import {
  type HandoffProfile,
  OutputReader,
  openHandoff,
  type RunReader,
  studyRuns,
} from '../reader/index.ts';
import { redact } from '../redact.ts';
import { isObjectStorage, openStorage, type S3Settings } from '../storage/index.ts';
import type { Row } from '../tables/index.ts';
import {
  buildFolder,
  deliver,
  existingPackages,
  existsError,
  type PackageForm,
  refuseInsideOutput,
} from './destination.ts';
import { type PackageSource, writeStudyPackage } from './package.ts';

export type { PackageForm } from './destination.ts';

export interface ShareOptions {
  /** The output: out/<name> or s3://bucket/prefix/<name>. */
  output: string;
  s3?: S3Settings;
  /** Permanent ids or link_ids; none: every study current/ holds. */
  studies: readonly string[];
  /** Where the packages go: a folder, or s3://bucket/prefix. */
  to: string;
  form: PackageForm;
  /** The privacy profile the handoff reader applies, 'identified' (--identified) or 'unprofiled' (the default: no privacy: section). */
  profile?: HandoffProfile;
  /** Where a package for a bucket is built before it is uploaded (default: the system's). */
  scratchDir?: string;
  /** Whether each study's linkage table is wanted (--linkage): made only then. */
  linkage?: boolean;
  /** Each step as it happens, for a progress line. */
  onProgress?: (event: ShareProgress) => void;
}

export type ShareProgress =
  | { step: 'reading'; link_id: string; index: number; of: number }
  | { step: 'writing'; link_id: string }
  | { step: 'warning'; link_id: string; message: string }
  | ({ step: 'done' } & SharedStudy);

export interface SharedStudy {
  study_id: string;
  link_id: string;
  /** The package: a folder, a zip file, or its s3:// location. */
  location: string;
  files: number;
  bytes: number;
  responses: number;
  /** Every pseudonym of the package and what it stands for (with `linkage`; none when identified). */
  linkage: readonly LinkageEntry[];
}

export async function shareOutput(options: ShareOptions): Promise<SharedStudy[]> {
  const output = await OutputReader.open(options.output, options.s3 ?? {});
  const handoff = openHandoff(output, options.profile ?? 'unprofiled');
  const chosen = await chooseStudies(output, options.studies);
  const names = studyFileNames(await output.studies());
  const runs = await output.runs();
  refuseInsideOutput(options.output, options.to);
  if (!isObjectStorage(options.to)) await mkdir(options.to, { recursive: true });
  const target = await openStorage(options.to, options.s3 ?? {});
  const nameOf = (study: Row<'studies'>) => names.get(study.study_id) ?? study.study_id;
  const existing = await existingPackages(target, chosen.map(nameOf), options.form);
  if (existing.length > 0) throw existsError(existing);
  const shared: SharedStudy[] = [];
  const build = await buildFolder(target, options.scratchDir);
  try {
    for (const [index, study] of chosen.entries()) {
      options.onProgress?.({ step: 'reading', link_id: study.link_id, index, of: chosen.length });
      const handed = await handoff.study(study.study_id);
      options.onProgress?.({ step: 'writing', link_id: study.link_id });
      const name = nameOf(study);
      const dir = join(build, `${index}`, name);
      const work = join(build, `${index}-work`);
      await mkdir(dir, { recursive: true });
      await mkdir(work, { recursive: true });
      const { files, responseIds } = await writeStudyPackage({
        study: handed,
        name,
        source: packageSource(output, studyRuns(runs, study.study_id), runs),
        privacy: handed.privacy,
        dir,
        work,
        madeAt: new Date(),
        onWarning: (message) => options.onProgress?.({ step: 'warning', link_id: study.link_id, message }),
      });
      const location = await deliver(target, name, options.form, dir, files);
      // The ledger (handoffs/) records the package and the responses it holds, as it holds them.
      await appendHandoff(output.storage, {
        command: 'share',
        package: location.split('/').at(-1) ?? name,
        location,
        studies: [{ study_id: study.study_id, link_id: study.link_id }],
        identified: handed.privacy.identified,
        responses: await handed.held(responseIds),
      });
      const done: SharedStudy = {
        study_id: study.study_id,
        link_id: study.link_id,
        location,
        files: files.length,
        bytes: files.reduce((sum, file) => sum + file.bytes, 0),
        responses: responseIds.length,
        linkage: options.linkage ? await handed.linkage() : [],
      };
      shared.push(done);
      options.onProgress?.({ step: 'done', ...done });
      await rm(join(build, `${index}`), { recursive: true, force: true });
      await rm(work, { recursive: true, force: true });
    }
  } finally {
    await rm(build, { recursive: true, force: true });
  }
  return shared;
}

/** The studies asked for (each once, in the order given), or all; an output without current/ is an error. */
async function chooseStudies(output: OutputReader, wanted: readonly string[]): Promise<Row<'studies'>[]> {
  if ((await output.current.parts('studies')).length === 0)
    throw new ConfigError(
      `${output.storage.describe(CURRENT_DIR)}: no current dataset; share reads current/, which a run writes (is ${output.location} an output, out/<name> or s3://bucket/prefix/<name>, that a run has exported into?)`,
      { context: { file: output.location } },
    );
  if (wanted.length === 0) return output.studies();
  const chosen = new Map<string, Row<'studies'>>();
  for (const idOrLinkId of wanted) {
    const study = await output.resolveStudy(idOrLinkId);
    if (!chosen.has(study.study_id)) chosen.set(study.study_id, study);
  }
  return [...chosen.values()];
}

/** Where the rows came from and how the output writes them, from its newest run's manifest. */
function packageSource(
  output: OutputReader,
  ofStudy: readonly RunReader[],
  all: readonly RunReader[],
): PackageSource {
  const newest = ofStudy.at(-1) ?? all[0];
  const config = (all[0] ?? newest)?.manifest.config;
  const formats: readonly Format[] = config?.output?.formats ?? defaultFormats;
  return {
    pipeline: output.name,
    service: redact(newest?.manifest.config?.source?.base_url ?? ''),
    runId: newest?.id ?? '',
    formats,
    csv: {
      bom: config?.output?.csv?.bom ?? false,
      escape_formulae: config?.output?.csv?.escape_formulae ?? true,
    },
    mediaEnabled: config?.media?.enabled ?? false,
  };
}
