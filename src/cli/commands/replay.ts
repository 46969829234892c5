/**
 * `study-export replay RUN_DIR`: rebuild every table of a run from its raw/ payloads, through
 * the same code as `run`, into a new run. Exit 0 complete, 3 partial (the same records rejected).
 */
import type { CommandModule } from 'yargs';
import { type Format, formatsRule } from '../../config/schema.ts';
import type { CliContext, LogFormatArgs } from '../context.ts';
import { reportRun } from '../run-report.ts';
import { parseFormats } from '../usage.ts';

interface ReplayArgs extends LogFormatArgs {
  run_dir: string;
  out?: string;
  formats?: Format[];
}

export function replayCommand(context: CliContext): CommandModule<object, ReplayArgs> {
  return {
    command: 'replay <run_dir>',
    describe: "Rebuild a run's tables from its raw/ payloads, without the service, into a new run",
    builder: (yargs) =>
      yargs
        .positional('run_dir', {
          type: 'string',
          describe: 'the run to rebuild, e.g. out/demo/runs/20261121T235500Z',
        })
        .demandOption('run_dir')
        .option('out', {
          type: 'string',
          requiresArg: true,
          describe: "output directory for the new run (default: the run's own, e.g. out)",
        })
        .option('formats', {
          type: 'string',
          requiresArg: true,
          coerce: parseFormats,
          describe: `${formatsRule} (default: the run's)`,
        })
        .example(
          '$0 replay out/demo/runs/20261121T235500Z',
          'a new run in out/demo/runs/ from the raw/ of that one',
        )
        .epilog(
          'Media is not replayed: the signed links in raw/ have expired, so the new run has no media.zip. ' +
            'The new run becomes latest; the state (the watermarks in state/) and the current/ dataset are left as they are.',
        ) as never,
    handler: async (args) => {
      const { replayRun } = await import('../../replay/index.ts');
      const start = `replay ${args.run_dir}: reading the answers recorded in its raw/`;
      await reportRun(context, args['log-format'] ?? 'text', start, (reporter, onPreviousRun) =>
        replayRun({
          runDir: args.run_dir,
          ...(args.out === undefined ? {} : { out: args.out }),
          ...(args.formats === undefined ? {} : { formats: args.formats }),
          reporter,
          onPreviousRun,
          env: context.env,
        }),
      );
    },
  };
}
