/** `study-export studies`: the studies the key can see, as a table or as JSON for scripts. */
import type { CommandModule } from 'yargs';
import { responseCountInDesc } from '../../api/resources.ts';
import { loadPipeline } from '../../config/load.ts';
import { registerSecret } from '../../redact.ts';
import { toIsoUtc } from '../../util/timestamp.ts';
import { type CliContext, type PipelineArgs, pipelineOptions, pipelineSelection } from '../context.ts';
import { alignRows } from '../format.ts';
import { formatWarning } from '../reporters.ts';

interface StudiesArgs extends PipelineArgs {
  json?: boolean;
}

export interface StudyRow {
  id: string;
  link_id: string;
  title: string;
  created_at: string;
  /** From desc ("<title> (<n> Responses)"); null when desc has another shape. */
  responses: number | null;
}

export function studiesCommand(context: CliContext): CommandModule<object, StudiesArgs> {
  return {
    command: 'studies',
    describe: 'List the studies the source shows (id, link_id, title, created_at, responses)',
    builder: (yargs) =>
      pipelineOptions(yargs)
        .option('json', { type: 'boolean', describe: 'print a JSON array instead of a table' })
        .example('$0 studies --pipeline nightly-incremental --json', '') as never,
    handler: async (args) => {
      const { config, file } = await loadPipeline({
        ...pipelineSelection(args),
        cwd: context.cwd,
        env: context.env,
      });
      const rows = await fetchStudies(config, file, context);
      if (args.json) context.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
      else context.stdout.write(`${formatStudies(rows)}\n`);
    },
  };
}

async function fetchStudies(
  config: Awaited<ReturnType<typeof loadPipeline>>['config'],
  file: string,
  context: CliContext,
): Promise<StudyRow[]> {
  // Loaded on use: `--help` and usage errors stay fast.
  const [{ createApiClient }, { clientSettings }, { listStudies }, { openSource }] = await Promise.all([
    import('../../api/client.ts'),
    import('../../config/client.ts'),
    import('../../extract/studies.ts'),
    import('../../pipeline/source.ts'),
  ]);
  const source = await openSource(config, context.env, file);
  registerSecret(source.apiKey);
  const client = createApiClient({
    baseUrl: source.baseUrl,
    apiKey: source.apiKey,
    ...clientSettings(config.source),
    concurrency: 1,
  });
  try {
    const warn = (line: string) => context.stderr.write(`${line}\n`);
    const studies = await listStudies(client, {
      raw: { write() {} },
      rejects: { write: (reject) => warn(`warning: a study was left out: ${reject.reason}`) },
      warn: (warning) => warn(formatWarning(warning)),
    });
    return studies.map((study) => ({
      id: study.id,
      link_id: study.link_id,
      title: study.title,
      // UTC, as in every table and file the tool writes (the service may send any offset).
      created_at: toIsoUtc(study.created_at),
      responses: responseCountInDesc(study.desc),
    }));
  } finally {
    client.close();
    await source.close();
  }
}

export function formatStudies(rows: StudyRow[]): string {
  if (rows.length === 0) return 'no studies visible';
  const header = ['id', 'link_id', 'title', 'created_at', 'responses'];
  const body = rows.map((row) => [
    row.id,
    row.link_id,
    row.title.length > 48 ? `${row.title.slice(0, 47)}…` : row.title,
    row.created_at,
    row.responses === null ? '?' : String(row.responses),
  ]);
  const lines = alignRows([header, ...body], ['left', 'left', 'left', 'left', 'right']);
  return `${lines.join('\n')}\n${rows.length} stud${rows.length === 1 ? 'y' : 'ies'}`;
}
