/**
 * `study-export share [OUTPUT] [--study ID_OR_LINK_ID ...] [--to DIR | s3://...] [--zip]`: each
 * chosen study of an output as the analyst's package (tables, wide sheet, workbook, codebook,
 * report, datapackage.json), a folder or a zip per study, de-identified by the pipeline's privacy
 * profile unless --identified. Reads only the output; no key.
 */
import type { CommandModule } from 'yargs';
import type { CliContext } from '../context.ts';
import { formatBytes } from '../format.ts';
import {
  chosenHandoff,
  endpointOption,
  type HandoffArgs,
  handoffOptions,
  outputOptions,
  studyOption,
  writeLinkage,
} from '../output.ts';

interface ShareArgs extends HandoffArgs {
  study?: string[];
  to?: string;
  zip?: boolean;
}

export function shareCommand(context: CliContext): CommandModule<object, ShareArgs> {
  return {
    command: 'share [output]',
    describe:
      "Write each study's analyst package: tables (CSV, Parquet), wide sheet, workbook, README.md codebook, report.html, datapackage.json",
    builder: (yargs) =>
      handoffOptions(outputOptions(yargs))
        .option('study', studyOption('a permanent study id or link_id (repeatable; default: every study)'))
        .option('to', {
          type: 'string',
          requiresArg: true,
          describe:
            'folder or s3://bucket/prefix for the packages (default: .); an existing package is refused',
        })
        .option('zip', { type: 'boolean', describe: 'each package as one .zip file' })
        .option('endpoint', endpointOption())
        .example(
          '$0 share out/demo --study checkout-express-test-round-2-ef35 --to handoff --zip',
          '',
        ) as never,
    handler: async (args) => {
      // The pipeline file is read beside OUTPUT too when named: its privacy: section.
      const to = args.to ?? context.cwd;
      const { output, s3, profile, linkage } = await chosenHandoff(args, context, to);
      const { shareOutput } = await import('../../share/index.ts');
      const shared = await shareOutput({
        output,
        s3,
        studies: args.study ?? [],
        to,
        profile,
        linkage: linkage !== null,
        form: args.zip ? 'zip' : 'folder',
        onProgress: (event) => {
          if (event.step === 'reading')
            context.stderr.write(`[${event.index + 1}/${event.of}] ${event.link_id}: reading current/\n`);
          else if (event.step === 'writing')
            context.stderr.write(`  ${event.link_id}: writing its package\n`);
          else if (event.step === 'warning')
            context.stderr.write(`  warning: ${event.link_id}: ${event.message}\n`);
          else
            context.stdout.write(
              `${event.location}: ${event.link_id} (${event.study_id}), ${event.responses} responses, ${event.files} files, ${formatBytes(event.bytes)}\n`,
            );
        },
      });
      if (linkage !== null) {
        const count = await writeLinkage(linkage, shared);
        context.stdout.write(
          `${linkage}: linkage table, ${count} pseudonyms (keep it apart from the packages)\n`,
        );
      }
    },
  };
}
