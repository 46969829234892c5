/** `study-export sandbox`: serve the reference service on loopback until stopped. */
import type { CommandModule } from 'yargs';
import { pipelineTemplate } from '../../config/template.ts';
import { parseResponseDeletions } from '../../sandbox/deletions.ts';
import { parseFaults } from '../../sandbox/faults.ts';
import type { SandboxOptions } from '../../sandbox/index.ts';
import { parseSchemaChanges } from '../../sandbox/study-schema.ts';
import { integerOption, positiveNumberOption } from '../usage.ts';

interface SandboxArgs {
  port?: number;
  seed?: number;
  studies?: number;
  responses?: number;
  'latency-ms'?: number;
  faults?: string;
  'max-per-page'?: number;
  'request-log'?: string;
  'media-scale'?: number;
  'clock-offset-min'?: number;
  'schema-change'?: string;
  'delete-responses'?: string;
  'print-pipeline'?: boolean;
}

/** The name of the pipeline --print-pipeline prints: its output goes to out/sandbox/. */
const PRINTED_PIPELINE = 'sandbox';

export function sandboxCommand(): CommandModule<object, SandboxArgs> {
  return {
    command: 'sandbox',
    describe: 'Serve the embedded reference service on 127.0.0.1 until stopped (Ctrl-C)',
    builder: (yargs) =>
      yargs
        .option('port', {
          type: 'number',
          requiresArg: true,
          coerce: integerOption('port', 0, 65535),
          describe: 'API port (0 = any free port)',
        })
        .option('seed', {
          type: 'number',
          requiresArg: true,
          coerce: integerOption('seed', 0),
          describe: 'seed of the generated data set',
        })
        .option('studies', {
          type: 'number',
          requiresArg: true,
          coerce: integerOption('studies', 1),
          describe: 'number of studies',
        })
        .option('responses', {
          type: 'number',
          requiresArg: true,
          coerce: integerOption('responses', 0),
          describe: 'responses per study',
        })
        .option('latency-ms', {
          type: 'number',
          requiresArg: true,
          coerce: integerOption('latency-ms', 0),
          describe: 'added latency per request',
        })
        .option('faults', {
          type: 'string',
          requiresArg: true,
          coerce: (spec: string) => {
            parseFaults(spec); // throws a ConfigError naming the wrong part
            return spec;
          },
          describe: 'injected faults, e.g. "5xx=0.1,429=0.05,reset=0.02,truncate=0.02,latency=20ms"',
        })
        .option('max-per-page', {
          type: 'number',
          requiresArg: true,
          coerce: integerOption('max-per-page', 1),
          describe: 'largest per_page the service honours',
        })
        .option('request-log', {
          type: 'string',
          requiresArg: true,
          describe: 'append every request to this file (JSON lines)',
        })
        .option('media-scale', {
          type: 'number',
          requiresArg: true,
          coerce: positiveNumberOption('media-scale'),
          describe: 'multiplies the size of generated media',
        })
        .option('clock-offset-min', {
          type: 'number',
          requiresArg: true,
          coerce: integerOption('clock-offset-min', -525_600, 525_600),
          describe: "runs the service's clock this many minutes from this machine's (negative: behind)",
        })
        .option('schema-change', {
          type: 'string',
          requiresArg: true,
          coerce: (spec: string) => {
            parseSchemaChanges(spec); // throws a ConfigError naming the wrong word
            return spec;
          },
          describe:
            'change a study as the service would, then add a response to it: add-question, reword-question, add-url-parameter, add-field, retype-field (comma-separated; KIND:LINK_ID for a study other than the first)',
        })
        .option('delete-responses', {
          type: 'string',
          requiresArg: true,
          coerce: (spec: string) => {
            parseResponseDeletions(spec); // throws a ConfigError naming the wrong part
            return spec;
          },
          describe:
            "delete responses as the service would: N (the first study's first N) or N:LINK_ID, comma-separated; the next run --reconcile takes them out of current/",
        })
        .option('print-pipeline', {
          type: 'boolean',
          describe: `after the first line, print a pipeline file for this sandbox (save it as pipelines/${PRINTED_PIPELINE}.yaml)`,
        })
        .example('$0 sandbox --port 8080', 'serve on http://127.0.0.1:8080')
        .example('$0 sandbox --port 8080 --print-pipeline', 'and print a pipeline file that runs against it')
        .example(
          '$0 sandbox --port 8080 --schema-change add-question,add-field',
          'the same service, its first study changed since: the next run reports it',
        )
        .epilog(
          'The first line on stdout is JSON: base_url, api_key (it sees every study served) and the media hosts.',
        ) as never,
    handler: async (args) => {
      const { runSandboxCommand } = await import('../../sandbox/index.ts');
      await runSandboxCommand(
        sandboxOptions(args),
        args['print-pipeline'] ? ({ base_url }) => sandboxPipeline(base_url) : undefined,
      );
    },
  };
}

/** A pipeline file for a running sandbox: every setting at its default, base_url its address. */
export function sandboxPipeline(baseUrl: string): string {
  return pipelineTemplate({
    name: PRINTED_PIPELINE,
    values: { source: { base_url: baseUrl } },
    header: [
      `A pipeline for \`study-export sandbox\` at ${baseUrl}. Save it as pipelines/${PRINTED_PIPELINE}.yaml, then:`,
      '  export STUDY_API_KEY=<api_key of the first line>   # it sees every study',
      `  study-export run --pipeline ${PRINTED_PIPELINE} --limit 10   # a sample first, then without --limit`,
      'The output (out/sandbox/) remembers this address: a sandbox on another port is another service',
      '(exit 2) unless the run is given --accept-new-source; --port keeps it the same.',
    ],
  });
}

function sandboxOptions(args: SandboxArgs): SandboxOptions {
  const options: SandboxOptions = {};
  if (args.port !== undefined) options.port = args.port;
  if (args.seed !== undefined) options.seed = args.seed;
  if (args.studies !== undefined) options.studies = args.studies;
  if (args.responses !== undefined) options.responses = args.responses;
  if (args['latency-ms'] !== undefined) options.latencyMs = args['latency-ms'];
  if (args.faults !== undefined) options.faults = args.faults;
  if (args['max-per-page'] !== undefined) options.maxPerPage = args['max-per-page'];
  if (args['request-log'] !== undefined) options.requestLog = args['request-log'];
  if (args['media-scale'] !== undefined) options.mediaScale = args['media-scale'];
  if (args['schema-change'] !== undefined) options.schemaChanges = parseSchemaChanges(args['schema-change']);
  if (args['delete-responses'] !== undefined)
    options.deleteResponses = parseResponseDeletions(args['delete-responses']);
  if (args['clock-offset-min'] !== undefined)
    options.startTime = Date.now() + args['clock-offset-min'] * 60_000;
  return options;
}
