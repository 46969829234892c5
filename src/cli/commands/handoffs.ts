/**
 * `study-export handoffs [OUTPUT] [--response ID]`: the packages made from an output (share,
 * archive, qdpx), from its ledger (handoffs/); with --response, those that held that response.
 */
import type { CommandModule } from 'yargs';
import type { CliContext } from '../context.ts';
import { chosenOutput, endpointOption, type OutputArgs, outputOptions } from '../output.ts';

interface HandoffsArgs extends OutputArgs {
  response?: string;
  json?: boolean;
}

export function handoffsCommand(context: CliContext): CommandModule<object, HandoffsArgs> {
  return {
    command: 'handoffs [output]',
    describe: 'List the packages made from an output (share, archive, qdpx) and where they went',
    builder: (yargs) =>
      outputOptions(yargs)
        .option('response', {
          type: 'string',
          requiresArg: true,
          describe: 'only the packages that held this response id',
        })
        .option('json', { type: 'boolean', describe: 'one JSON object per package' })
        .option('endpoint', endpointOption()) as never,
    handler: async (args) => {
      const { output, s3 } = await chosenOutput(args, context);
      const { openStorage } = await import('../../storage/index.ts');
      const { describeHandoff, listHandoffs } = await import('../../ledger/index.ts');
      const storage = await openStorage(output, s3);
      const found = await listHandoffs(
        storage,
        args.response === undefined ? {} : { responseId: args.response },
      );
      for (const handoff of found)
        context.stdout.write(`${args.json ? JSON.stringify(handoff) : describeHandoff(handoff)}\n`);
      if (found.length === 0 && !args.json) {
        const which = args.response === undefined ? '' : ` holding response ${args.response}`;
        context.stdout.write(`no package${which} was made from ${output}\n`);
      }
    },
  };
}
