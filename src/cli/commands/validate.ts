/** `study-export validate`: load the pipeline file, check the key's variable, show what it resolved to. */
import type { CommandModule } from 'yargs';
import { loadPipeline, resolveApiKey } from '../../config/load.ts';
import { apiDeadlineMs, type PipelineConfig } from '../../config/schema.ts';
import { redact } from '../../redact.ts';
import { type CliContext, type PipelineArgs, pipelineOptions, pipelineSelection } from '../context.ts';
import { alignRows } from '../format.ts';

export function validateCommand(context: CliContext): CommandModule<object, PipelineArgs> {
  return {
    command: 'validate',
    describe: 'Check a pipeline file and show what it resolves to',
    builder: (yargs) => pipelineOptions(yargs).example('$0 validate --pipeline nightly-incremental', ''),
    handler: async (args) => {
      const { config, file } = await loadPipeline({
        ...pipelineSelection(args),
        cwd: context.cwd,
        env: context.env,
      });
      resolveApiKey(config, context.env, file);
      context.stdout.write(`${file}: valid\n${describeConfig(config).join('\n')}\n`);
    },
  };
}

/** The resolved settings, one per line; the key is described by its variable, never shown. */
export function describeConfig(config: PipelineConfig): string[] {
  const { source, studies, output, media } = config;
  const sourceText =
    source.base_url === 'sandbox'
      ? 'sandbox (the embedded service; no key needed)'
      : `${redact(source.base_url)} (key from ${source.api_key_env}: set)`;
  const rows = [
    ['name', config.name],
    ['source', sourceText],
    [
      'requests',
      `${source.per_page} per page, ${source.concurrency} in flight, timeout ${source.timeout_ms} ms ` +
        `(${apiDeadlineMs(source)} ms a whole request), ${source.retries} retries, bodies up to ${source.max_body_mib} MiB`,
    ],
    ['in progress', source.include_in_progress ? 'included' : 'left out'],
    [
      'studies',
      `include ${studies.include.join(', ')}${studies.exclude.length ? `; exclude ${studies.exclude.join(', ')}` : ''}`,
    ],
    [
      'incremental',
      config.incremental.enabled ? 'yes (from the saved watermark per study)' : 'no (everything, every run)',
    ],
    [
      'output',
      `${output.dir}/${config.name}/ as ${output.formats.join(', ')} (csv: bom ${output.csv.bom ? 'on' : 'off'}, formulae ${output.csv.escape_formulae ? 'escaped' : 'as is'})`,
    ],
    ['media', media.enabled ? `on (video ${media.video}, ${media.concurrency} downloads at a time)` : 'off'],
  ];
  return alignRows(rows.map(([key, value]) => [`  ${key}:`, value ?? '']));
}
