/**
 * `study-export describe [OUTPUT]`: current/datapackage.json, README.md and report.html for
 * all of current/, after a night's shards (each describes only its own buckets). Needs no API
 * key: it reads only the output.
 */
import type { CommandModule } from 'yargs';
import { openStorage } from '../../storage/index.ts';
import type { CliContext } from '../context.ts';
import { chosenOutput, endpointOption, type OutputArgs, outputOptions } from '../output.ts';

export function describeCommand(context: CliContext): CommandModule<object, OutputArgs> {
  return {
    command: 'describe [output]',
    describe:
      "Describe all of current/ (datapackage.json, README.md, report.html): the step after a night's shards",
    builder: (yargs) =>
      outputOptions(
        yargs,
        "the pipeline's output, out/<name> or s3://bucket/prefix/<name> (default: the pipeline file's)",
      )
        .option(
          'endpoint',
          endpointOption(
            'for an s3:// output on an S3-compatible server: its URL (as output.s3.endpoint; AWS_ENDPOINT_URL also works)',
          ),
        )
        .example('$0 describe s3://bucket/study-export/nightly-incremental', '')
        .example('$0 describe --pipeline nightly-incremental', '') as never,
    handler: async (args) => {
      const { describeCurrent } = await import('../../publish/describe.ts');
      const { output, s3 } = await chosenOutput(args, context);
      const storage = await openStorage(output, s3);
      const described = await describeCurrent(storage);
      const runs = Object.entries(described.runs).map(([pointer, runId]) => `${pointer} ${runId}`);
      context.stdout.write(`${described.descriptor}: all of current/, as of ${runs.join(', ')}\n`);
    },
  };
}
