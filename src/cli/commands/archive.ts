/**
 * `study-export archive [OUTPUT]`: each chosen study of an output as a BagIt bag (a folder, or
 * one zip or tar file) for an institution's repository. Reads only the output; no key. Exit 3
 * when a bag lists recordings the runs never archived.
 */
import type { CommandModule } from 'yargs';
import { exitCodes } from '../../errors.ts';
import type { CliContext } from '../context.ts';
import {
  chosenHandoff,
  endpointOption,
  type HandoffArgs,
  handoffOptions,
  outputOptions,
  studyOption,
  writeLinkage,
} from '../output.ts';

interface ArchiveArgs extends HandoffArgs {
  study?: string[];
  to?: string;
  zip?: boolean;
  tar?: boolean;
  'source-organization'?: string;
  'contact-name'?: string;
  'contact-email'?: string;
}

export function archiveCommand(context: CliContext): CommandModule<object, ArchiveArgs> {
  return {
    command: 'archive [output]',
    describe: 'Pack each study of an output (newest rows, every recording) into a BagIt bag for a repository',
    builder: (yargs) =>
      handoffOptions(outputOptions(yargs))
        .option(
          'study',
          studyOption('a permanent study id or link_id (repeatable; default: every study of the output)'),
        )
        .option('to', {
          type: 'string',
          requiresArg: true,
          describe: 'folder (or s3://…) for the bags (default: .)',
        })
        .option('zip', { type: 'boolean', describe: 'each bag as one .zip file', conflicts: 'tar' })
        .option('tar', { type: 'boolean', describe: 'each bag as one .tar file' })
        .option(
          'endpoint',
          endpointOption('for s3:// on an S3-compatible server: its URL (AWS_ENDPOINT_URL also works)'),
        )
        .option('source-organization', {
          type: 'string',
          requiresArg: true,
          describe: 'bag-info.txt Source-Organization',
        })
        .option('contact-name', { type: 'string', requiresArg: true, describe: 'bag-info.txt Contact-Name' })
        .option('contact-email', {
          type: 'string',
          requiresArg: true,
          describe: 'bag-info.txt Contact-Email',
        })
        .epilog(
          'With OUTPUT and no --config or --pipeline, no pipeline file is read; otherwise its output and its archive: section (the options above win).',
        ) as never,
    handler: async (args) => {
      // The pipeline file is read beside OUTPUT too when named: its archive: and privacy: sections.
      const to = args.to ?? context.cwd;
      const { output, s3, config, profile, linkage } = await chosenHandoff(args, context, to);
      const { archiveOutput } = await import('../../archive/index.ts');
      const result = await archiveOutput({
        output,
        s3,
        studies: args.study ?? [],
        to,
        profile,
        linkage: linkage !== null,
        form: args.zip ? 'zip' : args.tar ? 'tar' : 'folder',
        info: {
          source_organization: args['source-organization'] ?? config?.archive?.source_organization,
          contact_name: args['contact-name'] ?? config?.archive?.contact_name,
          contact_email: args['contact-email'] ?? config?.archive?.contact_email,
        },
        onBag: (bag) => {
          const recordings = `${bag.recordings - bag.missing.length} of ${bag.recordings} recordings`;
          context.stdout.write(
            `${bag.location}: ${bag.link_id} (${bag.study_id}), ${bag.files} files, ${bag.bytes} bytes, ${recordings}\n`,
          );
          for (const missing of bag.missing)
            context.stdout.write(
              `  missing: response ${missing.response_id}, turn ${missing.turn}, ${missing.kind}: ${missing.reason}\n`,
            );
        },
      });
      if (linkage !== null) {
        const count = await writeLinkage(linkage, result.bags);
        context.stdout.write(
          `${linkage}: linkage table, ${count} pseudonyms (keep it apart from the bags)\n`,
        );
      }
      if (result.status === 'partial') {
        context.stderr.write(
          "study-export archive: some recordings are not in the bags (listed above and in each bag's data/recordings.csv)\n",
        );
        context.exitCode = exitCodes.partial;
      }
    },
  };
}
