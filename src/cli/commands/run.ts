/** `study-export run`: the main job. Exit 0 complete (or dry run), 3 partial; errors exit 1 or 2. */
import type { CommandModule, Options } from 'yargs';
import { loadPipeline, resolveApiKey } from '../../config/load.ts';
import { formatsRule, type PipelineConfig, settingBounds } from '../../config/schema.ts';
import type { RunOverrides } from '../../pipeline/run.ts';
import { redact, registerSecret } from '../../redact.ts';
import {
  type CliContext,
  type LogFormatArgs,
  type PipelineArgs,
  pipelineOptions,
  pipelineSelection,
} from '../context.ts';
import { reportRun } from '../run-report.ts';
import { JOB_INDEX_ENV, SHARD_COUNT_ENV, SHARD_ENV, type ShardArgs, shardOf } from '../shard.ts';
import { integerOption, parseFormats, parseSince } from '../usage.ts';

type RunArgs = PipelineArgs & ShardArgs & LogFormatArgs & { [option: string]: unknown };

/**
 * The options that override the pipeline file, keyed by the override they set, so that an
 * override without an option (or the reverse) does not compile.
 */
const overrideOptions: { [K in keyof Required<RunOverrides>]: { flag: string } & Options } = {
  out: {
    flag: 'out',
    type: 'string',
    requiresArg: true,
    describe: 'output directory (instead of output.dir)',
  },
  studies: {
    flag: 'study',
    type: 'string',
    array: true,
    requiresArg: true,
    describe: 'only these studies (permanent id or link_id; repeatable)',
  },
  since: {
    flag: 'since',
    type: 'string',
    requiresArg: true,
    coerce: parseSince,
    describe: 'only responses updated after this ISO date/timestamp (instead of the watermark)',
  },
  full: { flag: 'full', type: 'boolean', describe: 'ignore the saved watermarks: export everything' },
  formats: {
    flag: 'formats',
    type: 'string',
    requiresArg: true,
    coerce: parseFormats,
    describe: `${formatsRule} (instead of output.formats)`,
  },
  media: { flag: 'media', type: 'boolean', describe: 'archive audio and video (--no-media to skip)' },
  concurrency: {
    flag: 'concurrency',
    type: 'number',
    requiresArg: true,
    coerce: integerOption('concurrency', settingBounds.concurrency.min, settingBounds.concurrency.max),
    describe: 'API requests in flight (instead of source.concurrency)',
  },
  dryRun: {
    flag: 'dry-run',
    type: 'boolean',
    describe:
      'print the plan (studies; responses changed since the watermark, or the total for a full export); write nothing',
  },
  stateFile: {
    flag: 'state',
    type: 'string',
    requiresArg: true,
    describe:
      'one state file for every study (default: one file per study in state/ beside the runs, e.g. out/<name>/state/)',
  },
  limit: {
    flag: 'limit',
    type: 'number',
    requiresArg: true,
    coerce: integerOption('limit', 1),
    describe:
      'a sample: at most N responses per study, into a run marked as one; the state, current/ and latest stay as they were',
  },
  reconcile: {
    flag: 'reconcile',
    type: 'boolean',
    describe:
      'also list each study whole and take the responses the service no longer lists out of current/ (also scheduled: incremental.reconcile_every)',
  },
  acceptDeletions: {
    flag: 'accept-deletions',
    type: 'boolean',
    describe:
      'reconcile, and take out of current/ what the service no longer lists even beyond incremental.reconcile_max_fraction',
  },
  acceptNewSource: {
    flag: 'accept-new-source',
    type: 'boolean',
    describe:
      'let source.base_url differ from the service that wrote the output (the same data at a new address); recorded from this run on',
  },
  acceptSchemaChange: {
    flag: 'accept-schema-change',
    type: 'boolean',
    describe:
      "commit this run although a study's schema changed under schema.on_change: fail (the manifest records the acceptance)",
  },
};

export function runCommand(context: CliContext): CommandModule<object, RunArgs> {
  return {
    command: 'run',
    describe: 'Export the studies of a pipeline into a new run directory',
    builder: (yargs) =>
      Object.values(overrideOptions)
        .reduce((parser, { flag, ...option }) => parser.option(flag, option), pipelineOptions(yargs))
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
        .example('$0 run --pipeline acme --limit 10', 'try a service on 10 responses per study first')
        .epilog(
          'Exit codes: 0 complete (or nothing new: no run written, latest unchanged), 3 finished but partial ' +
            '(rejects, failed media or a lost listing, listed in the manifest; or committed but not all of its ' +
            'publication, which the next run completes), 1 failed (nothing committed), 2 usage, configuration or ' +
            'authentication error, 4 stopped by a rule of the pipeline file before committing (schema.on_change: ' +
            'fail), 75 another run holds the output (try again later), 130/143 interrupted.',
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
      // Loaded on use: `--help` and usage errors stay fast.
      const { runPipeline } = await import('../../pipeline/run.ts');
      await reportRun(
        context,
        args['log-format'] ?? 'text',
        startLine(config, args),
        (reporter, onPreviousRun) =>
          runPipeline({
            ...givenOverrides(args),
            config,
            configFile: file,
            reporter,
            onPreviousRun,
            env: context.env,
            ...(shard ? { shard } : {}),
          }),
      );
    },
  };
}

/** The first line: which pipeline, and what happens before the first bar (sandbox, listing). */
function startLine(config: PipelineConfig, args: RunArgs): string {
  const what = args['dry-run']
    ? `dry run of ${config.name}`
    : args.limit !== undefined
      ? `sample run of ${config.name} (at most ${args.limit} per study)`
      : `run ${config.name}`;
  if (config.source.base_url === 'sandbox') {
    return `${what}: starting the embedded sandbox (source.base_url is "sandbox"), then listing its studies`;
  }
  return `${what}: listing the studies at ${redact(config.source.base_url)}`;
}

/** The overrides given on the command line (an empty --study list is none). */
function givenOverrides(args: RunArgs): RunOverrides {
  const given: Record<string, unknown> = {};
  for (const [key, { flag }] of Object.entries(overrideOptions)) {
    const value = args[flag];
    if (value !== undefined && !(Array.isArray(value) && value.length === 0)) given[key] = value;
  }
  return given as RunOverrides;
}
