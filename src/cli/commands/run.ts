/** `study-export run`: the main job. Exit 0 complete (or dry run), 3 partial; errors exit 1 or 2. */
import type { CommandModule } from 'yargs';
import { loadPipeline, resolveApiKey } from '../../config/load.ts';
import { type Format, settingBounds } from '../../config/schema.ts';
import { createReporter, formatSummary } from '../../pipeline/reporters.ts';
import type { RunOptions, RunResult } from '../../pipeline/run.ts';
import { type CliContext, isCI, type PipelineArgs, pipelineOptions, pipelineSelection } from '../context.ts';
import { registerSecret } from '../report.ts';
import { JOB_INDEX_ENV, SHARD_COUNT_ENV, SHARD_ENV, type ShardArgs, shardOf } from '../shard.ts';
import { integerOption, parseFormats, parseSince } from '../usage.ts';

interface RunArgs extends PipelineArgs, ShardArgs {
  out?: string;
  study?: string[];
  since?: string;
  full?: boolean;
  formats?: Format[];
  media?: boolean;
  concurrency?: number;
  'dry-run'?: boolean;
  state?: string;
}

export function runCommand(context: CliContext): CommandModule<object, RunArgs> {
  return {
    command: 'run',
    describe: 'Export the studies of a pipeline into a new run directory',
    builder: (yargs) =>
      pipelineOptions(yargs)
        .option('out', {
          type: 'string',
          requiresArg: true,
          describe: 'output directory (instead of output.dir)',
        })
        .option('study', {
          type: 'string',
          array: true,
          requiresArg: true,
          describe: 'only these studies (permanent id or link_id; repeatable)',
        })
        .option('since', {
          type: 'string',
          requiresArg: true,
          coerce: parseSince,
          describe: 'only responses updated after this ISO date/timestamp (instead of the watermark)',
        })
        .option('full', { type: 'boolean', describe: 'ignore the saved watermarks: export everything' })
        .option('formats', {
          type: 'string',
          requiresArg: true,
          coerce: parseFormats,
          describe: 'csv, parquet or csv,parquet (instead of output.formats)',
        })
        .option('media', { type: 'boolean', describe: 'archive audio and video (--no-media to skip)' })
        .option('concurrency', {
          type: 'number',
          requiresArg: true,
          coerce: integerOption('concurrency', settingBounds.concurrency.min, settingBounds.concurrency.max),
          describe: 'API requests in flight (instead of source.concurrency)',
        })
        .option('dry-run', {
          type: 'boolean',
          describe: 'print the plan (studies, expected responses); write nothing',
        })
        .option('state', {
          type: 'string',
          requiresArg: true,
          describe: 'state file (default out/<name>/state.json)',
        })
        .option('shard', {
          type: 'string',
          requiresArg: true,
          describe: `only the studies of shard K of N (1-based, e.g. 2/3; also ${SHARD_ENV}=K/N)`,
        })
        .option('shard-count', {
          type: 'number',
          requiresArg: true,
          coerce: integerOption('shard-count', 1, 10_000),
          describe: `number of shards when the shard comes from ${JOB_INDEX_ENV} (also ${SHARD_COUNT_ENV})`,
        })
        .conflicts('since', 'full')
        .conflicts('shard', 'shard-count')
        .example('$0 run', 'run ./pipeline.yaml (the embedded sandbox by default)')
        .example('$0 run --pipeline nightly-incremental', 'run pipelines/nightly-incremental.yaml')
        .example('$0 run --study cars-2024 --no-media', 'one study, without media')
        .example('$0 run --shard 2/3 --dry-run', 'the studies the second of three shards would take')
        .epilog(
          'Exit codes: 0 complete, 3 finished but partial (rejects or failed media, listed in the manifest), 1 failed, 2 usage, configuration or authentication error.',
        ) as never,
    handler: async (args) => {
      const { config, file } = await loadPipeline({
        ...pipelineSelection(args),
        cwd: context.cwd,
        env: context.env,
      });
      const shard = shardOf(args, context.env);
      // Fail before any work when the key's variable is missing.
      registerSecret(resolveApiKey(config, context.env, file));
      const reporter = createReporter({
        tty: Boolean(context.stderr.isTTY),
        ci: isCI(context.env),
        stream: context.stderr,
      });
      // Loaded on use: `--help` and usage errors stay fast.
      const { runPipeline } = await import('../../pipeline/run.ts');
      const stopOnSignal = interruptHandler(reporter, context);
      let result: RunResult;
      try {
        const options = runOptions(args, config, file, reporter, context.env);
        if (shard) options.shard = shard;
        result = await runPipeline(options);
      } finally {
        stopOnSignal.remove();
        reporter.stop();
      }
      context.stdout.write(`${formatSummary(result)}\n`);
      context.exitCode = result.status === 'partial' ? 3 : 0;
    },
  };
}

/**
 * Ctrl-C or a CI cancel: put the terminal back (bars hide the cursor) and say what state the
 * output is in, then exit with the shell's code for the signal (130 SIGINT, 143 SIGTERM).
 */
function interruptHandler(reporter: RunOptions['reporter'], context: CliContext): { remove(): void } {
  const onSignal = (signal: NodeJS.Signals) => {
    reporter.stop();
    context.stderr.write(
      `study-export: interrupted by ${signal}: this run was not committed and its temporary folder is removed (latest still names the previous complete run)\n`,
    );
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    remove() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

function runOptions(
  args: RunArgs,
  config: RunOptions['config'],
  configFile: string,
  reporter: RunOptions['reporter'],
  env: NodeJS.ProcessEnv,
): RunOptions {
  const options: RunOptions = { config, configFile, reporter, env };
  if (args.out !== undefined) options.out = args.out;
  if (args.study !== undefined && args.study.length > 0) options.studies = args.study;
  if (args.since !== undefined) options.since = args.since;
  if (args.full !== undefined) options.full = args.full;
  if (args.formats !== undefined) options.formats = args.formats;
  if (args.media !== undefined) options.media = args.media;
  if (args.concurrency !== undefined) options.concurrency = args.concurrency;
  if (args['dry-run'] !== undefined) options.dryRun = args['dry-run'];
  if (args.state !== undefined) options.stateFile = args.state;
  return options;
}
