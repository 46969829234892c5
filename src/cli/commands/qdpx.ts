/**
 * `study-export qdpx [OUTPUT] [--study ID_OR_LINK_ID ...] [--to DIR]`: each chosen study of an
 * output as a REFI-QDA project (.qdpx) for NVivo, ATLAS.ti, MAXQDA and QualCoder. Needs no API
 * key: it reads only what the output holds (current/ and the runs' media.zip).
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

interface QdpxArgs extends HandoffArgs {
  study?: string[];
  to: string;
}

export function qdpxCommand(context: CliContext): CommandModule<object, QdpxArgs> {
  return {
    command: 'qdpx [output]',
    describe:
      'Write each study as a REFI-QDA project (.qdpx) for NVivo, ATLAS.ti, MAXQDA and QualCoder: conversations, recordings, respondents as cases, questions as codes',
    builder: (yargs) =>
      handoffOptions(outputOptions(yargs))
        .option('study', studyOption('a study by permanent id or link_id (repeatable; default: every study)'))
        .option('to', {
          type: 'string',
          requiresArg: true,
          default: '.',
          describe: 'folder for the .qdpx files',
        })
        .option('endpoint', endpointOption())
        .example('$0 qdpx out/demo --study checkout-express-test-round-2-ef35 --to projects', '') as never,
    handler: async (args) => {
      const { exportQdpx } = await import('../../qdpx/export.ts');
      const { output, s3, profile, linkage } = await chosenHandoff(args, context, args.to);
      const projects = await exportQdpx({
        output,
        studies: args.study ?? [],
        to: args.to,
        s3,
        profile,
        linkage: linkage !== null,
        onStudy: (study) => {
          for (const warning of study.warnings)
            context.stderr.write(
              `warning: ${study.link_id}${warning.response_id ? ` response ${warning.response_id}` : ''}: ${warning.message}\n`,
            );
          context.stdout.write(
            `${study.file}  ${study.responses} cases, ${study.codings} coded passages, ${study.recordings} recordings${study.external > 0 ? ` (${study.external} beside it)` : ''}, ${formatBytes(study.bytes)}\n`,
          );
        },
      });
      if (linkage !== null) {
        const count = await writeLinkage(linkage, projects);
        context.stdout.write(
          `${linkage}: linkage table, ${count} pseudonyms (keep it apart from the projects)\n`,
        );
      }
    },
  };
}
