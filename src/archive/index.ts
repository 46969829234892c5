/**
 * `study-export archive`: each chosen study of an output, local or s3://, as a BagIt 1.0 bag
 * (RFC 8493) in a folder of the user's choice, as a folder or one zip or tar file whose one
 * top-level folder is named like it. Read through the output reader (src/reader); nothing is
 * fetched from the service. A bag is written whole or removed; one that lacks recordings the
 * runs never archived lists them, and the result is partial (exit 3).
 */
import { access, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import packageJson from '../../package.json' with { type: 'json' };
import { ConfigError } from '../errors.ts';
import { appendHandoff } from '../ledger/index.ts';
import { studyFileNames } from '../names.ts';
import { defaultFormats, type Format } from '../output/formats/index.ts';
import type { LinkageEntry } from '../privacy/index.ts';
import { type HandoffProfile, OutputReader, openHandoff, studyRuns } from '../reader/index.ts';
import { isObjectStorage, openStorage, type S3Settings } from '../storage/index.ts';
import type { Storage } from '../storage/types.ts';
import { type BagInfoSettings, type StudyBagResult, writeStudyBag } from './bag.ts';
import { openFolderSink } from './folder-sink.ts';
import { newestFinish } from './provenance.ts';
import type { BagSink } from './sink.ts';
import { openTarSink } from './tar-sink.ts';
import { openZipSink } from './zip-sink.ts';

export type { BagInfoSettings, MissingRecording, StudyBagResult } from './bag.ts';
export { type BagCheck, verifyBag } from './verify.ts';

export type BagForm = 'folder' | 'zip' | 'tar';

export interface ArchiveOptions {
  /** The output: out/<name> or s3://bucket/prefix/<name>. */
  output: string;
  s3?: S3Settings;
  /** Permanent ids or link_ids; none: every study current/ holds. */
  studies: readonly string[];
  /** Where the bags go: a folder, or s3://bucket/prefix. */
  to: string;
  form: BagForm;
  info: BagInfoSettings;
  /** The privacy profile the bags are made with, 'identified' (--identified) or 'unprofiled' (the default: no privacy: section). */
  profile?: HandoffProfile;
  /** Where files are written before they are added to a bag (default: the system's). */
  scratchDir?: string;
  /** Whether each study's linkage table is wanted (--linkage): made only then. */
  linkage?: boolean;
  /** Each bag once written. */
  onBag?: (bag: ArchivedStudy) => void;
}

export interface ArchivedStudy extends StudyBagResult {
  study_id: string;
  link_id: string;
  /** Every pseudonym in the bag and what it stands for (with `linkage`; never in the bag). */
  linkage: LinkageEntry[];
}

export interface ArchiveResult {
  bags: ArchivedStudy[];
  /** partial: a bag lists recordings it could not hold. */
  status: 'complete' | 'partial';
}

export async function archiveOutput(options: ArchiveOptions): Promise<ArchiveResult> {
  const output = await OutputReader.open(options.output, options.s3 ?? {});
  const handoff = openHandoff(output, options.profile ?? 'unprofiled');
  const all = await output.studies();
  if (all.length === 0)
    throw new ConfigError(
      `${options.output}: no study in its current/ (is it an output, out/<name> or s3://bucket/prefix/<name>?)`,
    );
  const chosen = options.studies.length === 0 ? all : await resolveEach(output, options.studies);
  const names = studyFileNames(all);
  const runs = await output.runs();
  if (!isObjectStorage(options.to)) await mkdir(options.to, { recursive: true });
  const target = await openStorage(options.to, options.s3 ?? {});
  // As the output's newest run wrote its files: its formats, its CSV (a formula-like cell escaped, by default).
  const config = runs[0]?.manifest.config?.output;
  const formats: readonly Format[] = config?.formats ?? defaultFormats;
  const csv = { bom: config?.csv?.bom ?? false, escape_formulae: config?.csv?.escape_formulae ?? true };
  const bags: ArchivedStudy[] = [];
  for (const study of chosen) {
    const bagName = names.get(study.study_id) ?? study.study_id;
    const ofStudy = studyRuns(runs, study.study_id);
    const time = ofStudy.length > 0 ? newestFinish(ofStudy) : new Date();
    const sink = await openSink(target, bagName, options.form, time);
    const scratch = await mkdtemp(join(options.scratchDir ?? tmpdir(), 'study-export-archive-'));
    try {
      const handed = await handoff.study(study.study_id);
      const result = await writeStudyBag({
        pipeline: output.name,
        study: handed,
        name: bagName,
        runs: ofStudy,
        sink,
        scratch,
        info: options.info,
        tool: { name: packageJson.name, version: packageJson.version },
        formats,
        csv,
        time,
      });
      const bag = {
        ...result,
        study_id: study.study_id,
        link_id: study.link_id,
        linkage: options.linkage ? await handed.linkage() : [],
      };
      // The ledger (handoffs/) records the bag and the responses it holds, once it is whole.
      await appendHandoff(output.storage, {
        command: 'archive',
        package: result.location.split('/').at(-1) ?? bagName,
        location: result.location,
        studies: [{ study_id: study.study_id, link_id: study.link_id }],
        identified: handed.privacy.identified,
        responses: await handed.held(result.responseIds),
      });
      options.onBag?.(bag);
      bags.push(bag);
    } catch (error) {
      await sink.abort().catch(() => {});
      throw error;
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }
  return { bags, status: bags.some((bag) => bag.missing.length > 0) ? 'partial' : 'complete' };
}

async function resolveEach(output: OutputReader, wanted: readonly string[]) {
  const studies = [];
  const seen = new Set<string>();
  for (const idOrLinkId of wanted) {
    const study = await output.resolveStudy(idOrLinkId);
    if (!seen.has(study.study_id)) studies.push(study);
    seen.add(study.study_id);
  }
  return studies;
}

async function openSink(target: Storage, bagName: string, form: BagForm, time: Date): Promise<BagSink> {
  const name = form === 'folder' ? bagName : `${bagName}.${form}`;
  if (!isObjectStorage(target.location)) {
    const exists = await access(target.describe(name)).then(
      () => true,
      () => false,
    );
    if (exists)
      throw new ConfigError(
        `${target.describe(name)} exists; a bag is never written over: move it or choose --to`,
      );
  }
  if (form === 'zip') return openZipSink(target, name, bagName, time);
  if (form === 'tar') return openTarSink(target, name, bagName, time);
  return openFolderSink(target, bagName);
}
