/**
 * `study-export describe [OUTPUT]`: current/datapackage.json, README.md and report.html for
 * all of current/, after a night's shards (each describes only its own buckets). Needs no API
 * key: it reads only the output.
 */
import type { CommandModule } from 'yargs';
import { loadPipeline } from '../../config/load.ts';
import { locationOf, openStorage } from '../../storage/index.ts';
import { type CliContext, type PipelineArgs, pipelineOptions, pipelineSelection } from '../context.ts';

interface DescribeArgs extends PipelineArgs {
  output?: string;
  endpoint?: string;
}

export function describeCommand(context: CliContext): CommandModule<object, DescribeArgs> {
  return {
    command: 'describe [output]',
    describe:
      "Describe all of current/ (datapackage.json, README.md, report.html): the step after a night's shards",
    builder: (yargs) =>
      pipelineOptions(yargs)
        .positional('output', {
          type: 'string',
          describe:
            "the pipeline's output, out/<name> or s3://bucket/prefix/<name> (default: the pipeline file's)",
        })
        .option('endpoint', {
          type: 'string',
          requiresArg: true,
          describe:
            'for an s3:// output on an S3-compatible server: its URL (as output.s3.endpoint; AWS_ENDPOINT_URL also works)',
        })
        .example('$0 describe s3://bucket/study-export/nightly-incremental', '')
        .example('$0 describe --pipeline nightly-incremental', '') as never,
    handler: async (args) => {
      const { describeCurrent } = await import('../../publish/describe.ts');
      const storage = await outputOf(args, context);
      const described = await describeCurrent(storage);
      const runs = Object.entries(described.runs).map(([pointer, runId]) => `${pointer} ${runId}`);
      context.stdout.write(`${described.descriptor}: all of current/, as of ${runs.join(', ')}\n`);
    },
  };
}

/** OUTPUT as given, or the pipeline file's output folder. */
async function outputOf(args: DescribeArgs, context: CliContext) {
  const endpoint = args.endpoint ? { endpoint: args.endpoint } : {};
  if (args.output !== undefined) return openStorage(args.output, endpoint);
  const { config } = await loadPipeline({ ...pipelineSelection(args), cwd: context.cwd, env: context.env });
  return openStorage(locationOf(config.output.dir, config.name), { ...config.output.s3, ...endpoint });
}
