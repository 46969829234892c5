/**
 * `study-export erase [OUTPUT] (--response ID ... | --attribute KEY=VALUE ...)`: takes the chosen
 * responses out of every file of the output (every run, current/), under its lock, and names
 * the packages handed off that held them (src/erase/, docs/erasure.md).
 */
import type { CommandModule } from 'yargs';
import { describeHandoff } from '../../ledger/index.ts';
import type { CliContext } from '../context.ts';
import { chosenOutput, endpointOption, type OutputArgs, outputOptions } from '../output.ts';
import { UsageError } from '../usage.ts';

interface EraseArgs extends OutputArgs {
  response?: string[];
  attribute?: string[];
}

export function eraseCommand(context: CliContext): CommandModule<object, EraseArgs> {
  return {
    command: 'erase [output]',
    describe:
      'Remove responses from every file of an output (every run, current/) and name the packages handed off that held them',
    builder: (yargs) =>
      outputOptions(yargs)
        .option('response', {
          type: 'string',
          array: true,
          requiresArg: true,
          describe: 'a response id to erase (repeatable)',
        })
        .option('attribute', {
          type: 'string',
          array: true,
          requiresArg: true,
          describe: 'KEY=VALUE: erase every response whose URL attribute KEY is VALUE (repeatable)',
          conflicts: 'response',
        })
        .option('endpoint', endpointOption())
        .example('$0 erase out/demo --response 3f2a…', '') as never,
    handler: async (args) => {
      const responses = args.response ?? [];
      const attributes = (args.attribute ?? []).map(parseAttribute);
      if (responses.length === 0 && attributes.length === 0)
        throw new UsageError('erase needs what to erase: --response ID or --attribute KEY=VALUE', 'erase');
      const { output, s3 } = await chosenOutput(args, context);
      const { eraseResponses } = await import('../../erase/index.ts');
      const result = await eraseResponses({
        output,
        s3,
        choice: responses.length > 0 ? { responses } : { attributes },
        onProgress: (event) =>
          context.stderr.write(
            event.step === 'run'
              ? `[${event.done}/${event.of}] run ${event.run_id}: rewritten without them\n`
              : `current/: ${event.studies} stud${event.studies === 1 ? 'y' : 'ies'} rewritten without them\n`,
          ),
      });
      for (const record of [...result.finished, result.erasure].filter(
        (record, index, all) => all.indexOf(record) === index,
      )) {
        const rows = record.runs.reduce((sum, run) => sum + run.rows, 0);
        const recordings = record.runs.reduce((sum, run) => sum + run.recordings, 0);
        const finished =
          result.finished.includes(record) && record !== result.erasure
            ? ' (an erasure stopped earlier, finished now)'
            : '';
        context.stdout.write(
          `erasure ${record.id}${finished}: ${record.responses.length} response(s) out of ${record.runs.length} run(s) (${rows} rows, ${recordings} recordings) and ${record.current.studies} stud${record.current.studies === 1 ? 'y' : 'ies'} of current/; recorded in erasures/${record.id}.json\n`,
        );
      }
      if (result.handoffs.length === 0) {
        context.stdout.write('handed off: no package made from this output held them (handoffs/)\n');
        return;
      }
      context.stdout.write(
        `handed off: ${result.handoffs.length} package(s) held an erased response; tell their recipients:\n`,
      );
      for (const handoff of result.handoffs) context.stdout.write(`  ${describeHandoff(handoff)}\n`);
    },
  };
}

function parseAttribute(text: string): { key: string; value: string } {
  const cut = text.indexOf('=');
  if (cut <= 0) throw new UsageError(`--attribute ${text}: expected KEY=VALUE`, 'erase');
  return { key: text.slice(0, cut), value: text.slice(cut + 1) };
}
