/**
 * `study-export view RUN_DIR | s3://…/runs/<id> | out/<name>/current`: a read-only web
 * viewer on loopback for one run or the current dataset; prints its URL and serves until
 * Ctrl-C. Needs no API key: it reads only what the run holds.
 */
import { spawn } from 'node:child_process';
import type { CommandModule } from 'yargs';
import { untilStopped } from '../../util/signals.ts';
import type { CliContext } from '../context.ts';
import { integerOption } from '../usage.ts';

interface ViewArgs {
  source: string;
  port?: number;
  open?: boolean;
  endpoint?: string;
}

export function viewCommand(context: CliContext): CommandModule<object, ViewArgs> {
  return {
    command: 'view <source>',
    describe:
      'Browse a run (or current/) in a local web page: studies, responses, conversations with their recordings',
    builder: (yargs) =>
      yargs
        .positional('source', {
          type: 'string',
          describe:
            'a run directory (out/demo/runs/<run id>), s3://bucket/prefix/demo/runs/<run id>, or out/demo/current',
        })
        .option('port', {
          type: 'number',
          requiresArg: true,
          describe: 'port on 127.0.0.1 (default: a free one)',
          coerce: integerOption('port', 1, 65535),
        })
        .option('open', { type: 'boolean', describe: 'open the page in the default browser' })
        .option('endpoint', {
          type: 'string',
          requiresArg: true,
          describe: 'for an s3:// source on an S3-compatible server: its URL (AWS_ENDPOINT_URL also works)',
        })
        .demandOption('source') as never,
    handler: async (args) => {
      const { openViewData } = await import('../../view/dataset.ts');
      const { startViewServer } = await import('../../view/server.ts');
      const data = await openViewData(args.source, args.endpoint ? { endpoint: args.endpoint } : {});
      const server = await startViewServer(data, {
        ...(args.port !== undefined ? { port: args.port } : {}),
        onError: (error) => context.stderr.write(`study-export view: ${(error as Error).message}\n`),
      });
      const what = data.kind === 'run' ? `run ${data.runId}` : 'the current dataset';
      context.stdout.write(
        `${server.url}  ${what}: ${data.studies.length} studies, ${data.responses.size} responses (read-only; Ctrl-C stops it)\n`,
      );
      if (args.open) openBrowser(server.url, context);
      await untilStopped();
      await server.close();
    },
  };
}

/** The platform's opener; if there is none the URL printed above is still there. */
function openBrowser(url: string, context: CliContext): void {
  const [command, ...args] =
    process.platform === 'darwin'
      ? ['open', url]
      : process.platform === 'win32'
        ? ['cmd', '/c', 'start', '', url]
        : ['xdg-open', url];
  const child = spawn(command as string, args, { stdio: 'ignore', detached: true });
  child.on('error', () => context.stderr.write(`study-export view: could not open a browser; open ${url}\n`));
  child.unref();
}
