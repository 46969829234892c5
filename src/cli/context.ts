/** What every command handler gets: the process's environment and streams, injectable for tests. */
import type { Argv } from 'yargs';

export interface CliContext {
  argv: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  /** The command's exit code (0 unless set). */
  exitCode: number;
  /** Time since the process started, for the one elapsed time the summary gives. */
  elapsedMs?: () => number;
}

export interface PipelineArgs {
  config?: string;
  pipeline?: string;
}

/** --config FILE | --pipeline NAME, shared by run, studies and validate. */
export function pipelineOptions<T>(yargs: Argv<T>): Argv<T & PipelineArgs> {
  return yargs
    .option('config', {
      alias: 'c',
      type: 'string',
      describe: 'pipeline file to use',
      requiresArg: true,
      conflicts: 'pipeline',
    })
    .option('pipeline', {
      alias: 'p',
      type: 'string',
      describe: 'use pipelines/NAME.yaml',
      requiresArg: true,
    })
    .epilog('Without --config or --pipeline, ./pipeline.yaml is used.') as Argv<T & PipelineArgs>;
}

export type LogFormat = 'text' | 'json';

export interface LogFormatArgs {
  'log-format'?: LogFormat;
}

/**
 * --log-format as the command line gives it, read before yargs parses it so that even a
 * usage error is reported in that format (yargs still checks the value).
 */
export function logFormatOf(argv: string[]): LogFormat {
  let format: LogFormat = 'text';
  argv.forEach((arg, index) => {
    const value = arg === '--log-format' ? argv[index + 1] : /^--log-format=(.*)$/.exec(arg)?.[1];
    if (value !== undefined) format = value === 'json' ? 'json' : 'text';
  });
  return format;
}

/** CI is set to anything but "false"/"0": no live bars. */
export function isCI(env: NodeJS.ProcessEnv): boolean {
  const value = env.CI;
  return value !== undefined && value !== '' && value !== 'false' && value !== '0';
}

/** Only the options given: loadPipeline tells "not given" from "given". */
export function pipelineSelection(args: PipelineArgs): PipelineArgs {
  const picked: PipelineArgs = {};
  if (args.config !== undefined) picked.config = args.config;
  if (args.pipeline !== undefined) picked.pipeline = args.pipeline;
  return picked;
}
