/**
 * What the commands that read an output share (describe, qdpx, archive): OUTPUT, by default
 * the pipeline file's output, --endpoint for an s3:// output on an S3-compatible server, and
 * --study to choose among its studies.
 */
import type { Argv } from 'yargs';
import { loadPipeline } from '../config/load.ts';
import type { PipelineConfig } from '../config/schema.ts';
import { locationOf, type S3Settings } from '../storage/index.ts';
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
    return { output: args.output, s3: endpoint, config: null };
  const { config } = await loadPipeline({ ...pipelineSelection(args), cwd: context.cwd, env: context.env });
  return {
    output: args.output ?? locationOf(config.output.dir, config.name),
    s3: { ...config.output.s3, ...endpoint },
    config,
  };
}
