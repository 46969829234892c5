/**
 * What the commands that read an output share (describe, qdpx, archive, share): OUTPUT, by
 * default the pipeline file's output, --endpoint for an s3:// output on an S3-compatible server,
 * --study to choose among its studies; and for the handoff commands (archive, qdpx, share)
 * --identified and --linkage, with the privacy profile they apply.
 */
import { access, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Argv } from 'yargs';
import { loadPipeline } from '../config/load.ts';
import type { PipelineConfig } from '../config/schema.ts';
import { ConfigError } from '../errors.ts';
import type { LinkageEntry } from '../privacy/index.ts';
import type { HandoffProfile } from '../reader/index.ts';
import { isObjectStorage, locationOf, type S3Settings } from '../storage/index.ts';
import { type CliContext, type PipelineArgs, pipelineOptions, pipelineSelection } from './context.ts';

export interface OutputArgs extends PipelineArgs {
  output?: string;
  endpoint?: string;
}

/** [output] beside --config and --pipeline; `describe` says what it is to the command. */
export function outputOptions<T>(
  yargs: Argv<T>,
  describe = "an output, out/<name> or s3://bucket/prefix/<name> (default: the pipeline's)",
): Argv<T & OutputArgs> {
  return pipelineOptions(yargs).positional('output', { type: 'string', describe }) as Argv<T & OutputArgs>;
}

/** --endpoint, where the command lists it; `describe` says what it opens. */
export function endpointOption(
  describe = 'for an s3:// output on an S3-compatible server: its URL (AWS_ENDPOINT_URL also works)',
) {
  return { type: 'string', requiresArg: true, describe } as const;
}

/** --study, repeatable: the studies of the output to take, by permanent id or link_id. */
export function studyOption(describe: string) {
  return { type: 'string', array: true, requiresArg: true, describe } as const;
}

export interface ChosenOutput {
  /** A folder or s3://bucket/prefix/<name>. */
  output: string;
  /** The pipeline file's output.s3 where it was read, --endpoint over it. */
  s3: S3Settings;
  /** The pipeline file, where it was read. */
  config: PipelineConfig | null;
  /** Where the pipeline file is, as the user sees it; null when none was read. */
  file: string | null;
}

/**
 * OUTPUT as given, or the pipeline file's output. The pipeline file is read when OUTPUT is
 * not given, and also beside OUTPUT when `alsoNamed` and --config or --pipeline names one (for
 * a command that takes more from it than the output).
 */
export async function chosenOutput(
  args: OutputArgs,
  context: CliContext,
  options: { alsoNamed?: boolean } = {},
): Promise<ChosenOutput> {
  const endpoint = args.endpoint ? { endpoint: args.endpoint } : {};
  const named = args.config !== undefined || args.pipeline !== undefined;
  if (args.output !== undefined && !(options.alsoNamed === true && named))
    return { output: args.output, s3: endpoint, config: null, file: null };
  const { config, file } = await loadPipeline({
    ...pipelineSelection(args),
    cwd: context.cwd,
    env: context.env,
  });
  return {
    output: args.output ?? locationOf(config.output.dir, config.name),
    s3: { ...config.output.s3, ...endpoint },
    config,
    file,
  };
}

export interface HandoffArgs extends OutputArgs {
  identified?: boolean;
  linkage?: string;
}

/** --identified and --linkage, declared once for every handoff command. */
export function handoffOptions<T>(yargs: Argv<T>): Argv<T & HandoffArgs> {
  return yargs
    .option('identified', {
      type: 'boolean',
      describe:
        "keep the respondents' identities: the pipeline file's privacy: profile is not applied, and the package says so",
    })
    .option('linkage', {
      type: 'string',
      requiresArg: true,
      conflicts: 'identified',
      describe:
        'write the table pseudonym <-> response id (and attribute values) to FILE, for the data controller; never inside the destination',
    }) as Argv<T & HandoffArgs>;
}

export interface ChosenHandoff extends ChosenOutput {
  /** The privacy profile, 'identified' (--identified) or 'unprofiled' (no privacy: section). */
  profile: HandoffProfile;
  /** Where the linkage table goes (absolute), or null. */
  linkage: string | null;
}

/**
 * The output and how its packages are made. With a pipeline file that has a privacy: section
 * the profile applies unless --identified; an OUTPUT given without its pipeline file, whose runs
 * recorded a privacy: section, is refused rather than handed off identified by accident. Every
 * problem (the secret's variable, the terms file, a pattern, --linkage inside `destination`)
 * is found here, before anything is written.
 */
export async function chosenHandoff(
  args: HandoffArgs,
  context: CliContext,
  destination: string,
): Promise<ChosenHandoff> {
  const chosen = await chosenOutput(args, context, { alsoNamed: true });
  const linkage = args.linkage === undefined ? null : path.resolve(context.cwd, args.linkage);
  if (linkage !== null && !isObjectStorage(destination)) {
    const inside = path.relative(path.resolve(context.cwd, destination), linkage);
    if (inside === '' || (!inside.startsWith('..') && !path.isAbsolute(inside)))
      throw new ConfigError(
        `--linkage ${args.linkage}: inside the destination ${destination}, where the packages go; the linkage table re-identifies them: write it elsewhere`,
      );
  }
  if (linkage !== null && (await exists(linkage)))
    throw new ConfigError(
      `--linkage ${args.linkage}: the file exists; a linkage table is never written over`,
    );
  if (args.identified === true) return { ...chosen, profile: 'identified', linkage: null };
  const privacy = chosen.config?.privacy;
  if (privacy && chosen.file !== null) {
    const { loadPrivacyProfile } = await import('../privacy/index.ts');
    const profile = await loadPrivacyProfile(privacy, {
      file: chosen.file,
      cwd: context.cwd,
      env: context.env,
    });
    return { ...chosen, profile, linkage };
  }
  if (chosen.config === null && (await recordsPrivacy(chosen.output, chosen.s3)))
    throw new ConfigError(
      `${chosen.output}: the pipeline that wrote it has a privacy: section; name its file (--config FILE or --pipeline NAME) so the profile applies, or give --identified`,
    );
  if (linkage !== null)
    throw new ConfigError(
      '--linkage: no privacy profile applies (the pipeline file has no privacy: section)',
    );
  return { ...chosen, profile: 'unprofiled', linkage: null };
}

/** Whether the output's newest run recorded a pipeline file with a privacy: section. */
async function recordsPrivacy(output: string, s3: S3Settings): Promise<boolean> {
  const { OutputReader } = await import('../reader/index.ts');
  const runs = await (await OutputReader.open(output, s3)).runs().catch(() => []);
  return runs[0]?.manifest.config?.privacy !== undefined;
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

export interface StudyLinkage {
  study_id: string;
  link_id: string;
  linkage: readonly LinkageEntry[];
}

const linkageColumns = ['study_id', 'link_id', 'kind', 'pseudonym', 'response_id', 'key', 'value'] as const;

/**
 * The linkage table of the packages just made, as CSV, readable by its owner only: every
 * pseudonym and the response id (or URL-parameter value) it stands for.
 */
export async function writeLinkage(file: string, studies: readonly StudyLinkage[]): Promise<number> {
  const { csvText } = await import('../output/formats/csv.ts');
  const rows = studies.flatMap((study) =>
    study.linkage.map((entry) => [
      study.study_id,
      study.link_id,
      entry.kind,
      entry.pseudonym,
      entry.response_id,
      entry.key,
      entry.value,
    ]),
  );
  await writeFile(file, csvText([[...linkageColumns], ...rows], { bom: false, escape_formulae: true }), {
    flag: 'wx',
    mode: 0o600,
  });
  return rows.length;
}
