/**
 * `study-export init [NAME]`: a new pipeline file, pipelines/NAME.yaml (./pipeline.yaml
 * without NAME), with every key at its default and explained (src/config/template.ts). It
 * never overwrites a file and never asks anything: what differs from the defaults is given
 * as options, so it runs the same in a terminal, a script or a container.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { CommandModule } from 'yargs';
import { DEFAULT_PIPELINE_FILE, PIPELINES_DIR } from '../../config/load.ts';
import { PipelineConfig, pipelineNamePattern, pipelineNameRule, SourceConfig } from '../../config/schema.ts';
import { pipelineTemplate } from '../../config/template.ts';
import { ConfigError } from '../../errors.ts';
import { redact } from '../../redact.ts';
import { describeSystemError } from '../../util/system-errors.ts';
import type { CliContext } from '../context.ts';
import { UsageError } from '../usage.ts';

interface InitArgs {
  name?: string;
  'base-url'?: string;
}

export function initCommand(context: CliContext): CommandModule<object, InitArgs> {
  return {
    command: 'init [name]',
    describe: 'Write a new pipeline file: every setting at its default, each with a comment',
    builder: (yargs) =>
      yargs
        .positional('name', {
          type: 'string',
          describe: `the pipeline's name: writes ${PIPELINES_DIR}/NAME.yaml (without it, ./${DEFAULT_PIPELINE_FILE} named after the folder)`,
        })
        .option('base-url', {
          type: 'string',
          requiresArg: true,
          describe: 'the service\'s URL (source.base_url; default "sandbox", the embedded service)',
        })
        .example('$0 init acme --base-url https://studies.example.com', `writes ${PIPELINES_DIR}/acme.yaml`)
        .example('$0 init', `writes ./${DEFAULT_PIPELINE_FILE} for the sandbox`)
        .epilog('An existing file is never overwritten (exit 2).') as never,
    handler: async (args) => {
      const name = args.name === undefined ? folderName(context.cwd) : checkedName(args.name);
      const baseUrl = args['base-url'];
      if (baseUrl !== undefined && !SourceConfig.shape.base_url.safeParse(baseUrl).success) {
        throw new UsageError(
          `--base-url: expected "sandbox" or an http:// or https:// URL, found "${baseUrl}"`,
          'init',
        );
      }
      const file = args.name === undefined ? DEFAULT_PIPELINE_FILE : path.join(PIPELINES_DIR, `${name}.yaml`);
      const text = pipelineTemplate({
        name,
        ...(baseUrl === undefined ? {} : { values: { source: { base_url: baseUrl } } }),
        header: [
          `Pipeline "${name}", written by \`study-export init\`: every setting at its default.`,
          'Change what you need; a key left out takes the default shown here.',
        ],
      });
      await writeNew(path.resolve(context.cwd, file), file, text);
      const config = PipelineConfig.parse({ name, source: { base_url: baseUrl } });
      const select = args.name === undefined ? '' : ` --pipeline ${name}`;
      const lines =
        config.source.base_url === 'sandbox'
          ? [
              `wrote ${file}: pipeline "${name}" for the embedded sandbox (no key, no network)`,
              `next: study-export run${select}`,
            ]
          : [
              `wrote ${file}: pipeline "${name}" for ${redact(config.source.base_url)}, key from $${config.source.api_key_env}`,
              `next: export ${config.source.api_key_env}=..., then study-export validate${select}, study-export run${select} --dry-run`,
            ];
      context.stdout.write(`${lines.join('\n')}\n`);
    },
  };
}

function checkedName(given: string): string {
  const name = given.replace(/\.ya?ml$/, '');
  if (!pipelineNamePattern.test(name)) {
    throw new UsageError(`init NAME: ${pipelineNameRule}, found "${given}"`, 'init');
  }
  return name;
}

/** The folder's name as a pipeline name (characters a folder name may not carry become "-"). */
function folderName(cwd: string): string {
  const name = path
    .basename(cwd)
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .replace(/^[._-]+/, '');
  return pipelineNamePattern.test(name) ? name : 'pipeline';
}

/** Creates the file; one already there is left as it is. */
async function writeNew(absolute: string, file: string, text: string): Promise<void> {
  try {
    await mkdir(path.dirname(absolute), { recursive: true });
    await writeFile(absolute, text, { flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new ConfigError(
        `${file} already exists: init never overwrites a pipeline file (edit it, remove it, or give another name)`,
        { context: { file } },
      );
    }
    throw describeSystemError(error, { what: 'pipeline file', path: file, configured: true });
  }
}
