/**
 * The command line: yargs with strict options, one module per command, usage errors as
 * exit 2, and every other error reported once (report.ts).
 */
import yargs from 'yargs';
import packageJson from '../../package.json' with { type: 'json' };
import { closestName } from '../util/closest.ts';
import { archiveCommand } from './commands/archive.ts';
import { describeCommand } from './commands/describe.ts';
import { eraseCommand } from './commands/erase.ts';
import { handoffsCommand } from './commands/handoffs.ts';
import { initCommand } from './commands/init.ts';
import { qdpxCommand } from './commands/qdpx.ts';
import { replayCommand } from './commands/replay.ts';
import { runCommand } from './commands/run.ts';
import { sandboxCommand } from './commands/sandbox.ts';
import { shareCommand } from './commands/share.ts';
import { studiesCommand } from './commands/studies.ts';
import { validateCommand } from './commands/validate.ts';
import { verifyCommand } from './commands/verify.ts';
import { viewCommand } from './commands/view.ts';
import { type CliContext, logFormatOf } from './context.ts';
import { reportError } from './report.ts';
import { UsageError } from './usage.ts';

const commandNames = [
  'init',
  'run',
  'replay',
  'studies',
  'sandbox',
  'validate',
  'verify',
  'view',
  'describe',
  'archive',
  'qdpx',
  'share',
  'erase',
  'handoffs',
];

const namedCommandsMessage = `name a command: ${commandNames.slice(0, -1).join(', ')} or ${commandNames.at(-1)}`;

/** Words people try for a command that is spelled otherwise here. */
const commandSynonyms: Record<string, string> = {
  export: 'run',
  list: 'studies',
  ls: 'studies',
  serve: 'sandbox',
  check: 'validate',
  browse: 'view',
  open: 'view',
  new: 'init',
};

/** The command an unknown one most likely meant: a near spelling, a prefix, or a synonym. */
export function closestCommand(name: string): string | undefined {
  const lower = name.toLowerCase();
  if (commandNames.includes(lower)) return lower;
  return Object.hasOwn(commandSynonyms, lower) ? commandSynonyms[lower] : closestName(lower, commandNames);
}

/** Runs one command line and resolves to the process exit code. */
export async function main(context: CliContext): Promise<number> {
  const parser = yargs(context.argv)
    .scriptName('study-export')
    .usage(
      '$0 <command> [options]\n\nExport a Study Responses service into tables (CSV, Parquet, Excel workbooks), a zip of its\nrecordings and a current dataset of every response.',
    )
    .command(initCommand(context))
    .command(runCommand(context))
    .command(replayCommand(context))
    .command(studiesCommand(context))
    .command(sandboxCommand())
    .command(validateCommand(context))
    .command(verifyCommand(context))
    .command(viewCommand(context))
    .command(describeCommand(context))
    .command(archiveCommand(context))
    .command(qdpxCommand(context))
    .command(shareCommand(context))
    .command(eraseCommand(context))
    .command(handoffsCommand(context))
    .option('log-format', {
      choices: ['text', 'json'] as const,
      default: 'text' as const,
      global: true,
      describe:
        'json: one JSON object per line on stderr for each event (progress, warnings, errors), for CI log collectors',
    })
    .demandCommand(1, namedCommandsMessage)
    .strict()
    .help()
    .alias('help', 'h')
    // Ours, not whatever package.json yargs finds above the bin's path (node_modules/.bin).
    .version(packageJson.version)
    .wrap(Math.min(110, process.stdout.columns || 100))
    .fail((message, error, usage) => {
      // yargs' own validation gives a message; an error thrown by a handler comes through as is.
      if (message) {
        // The options the command takes (yargs passes its usage here, not the parser).
        const known = Object.keys((usage as unknown as YargsUsage).getDescriptions?.() ?? {});
        throw new UsageError(usageMessage(message, context.argv, known), commandOf(context.argv));
      }
      throw error;
    })
    .exitProcess(false);
  try {
    await parser.parseAsync();
    return context.exitCode;
  } catch (error) {
    return reportError(error, context.stderr, context.env, logFormatOf(context.argv));
  }
}

interface YargsUsage {
  getDescriptions?(): Record<string, unknown>;
}

/**
 * yargs' messages, said the way the rest of the tool speaks: one line, options with dashes,
 * and the option meant when an unknown one is a near miss of a known one.
 */
export function usageMessage(message: string, argv: string[], knownOptions: string[] = []): string {
  const choice = /Argument: (\S+), Given: (.+), Choices: (.+)$/m.exec(message);
  if (choice?.[1]) return `${dashed(choice[1])}: expected one of ${choice[3]}, found ${choice[2]}`;
  const text = message.split('\n')[0]?.trim() ?? message;
  const unknown = /^Unknown arguments?: (.+)$/.exec(text);
  if (unknown?.[1]) {
    const names = unknown[1].split(', ');
    const spelled = (name: string) =>
      argv.find((arg) => /^-/.test(arg) && optionName(arg) === name)?.split('=')[0];
    const options = names.filter((name) => spelled(name) !== undefined);
    const others = names.filter((name) => !options.includes(name));
    const parts: string[] = [];
    if (options.length > 0) {
      const named = options.map((name) => {
        const given = spelled(name) ?? name;
        const meant = closestName(optionName(given), knownOptions);
        const negated = /^--no-/.test(given) ? 'no-' : '';
        return meant === undefined ? given : `${given} (did you mean --${negated}${meant}?)`;
      });
      parts.push(`unknown option${options.length > 1 ? 's' : ''} ${named.join(', ')}`);
    }
    if (others.length > 0 && !commandOf(argv)) return unknownCommand(others[0] as string);
    if (others.length > 0) {
      parts.push(
        `unexpected argument${others.length > 1 ? 's' : ''} ${others.map((name) => `"${name}"`).join(', ')}`,
      );
    }
    return parts.join('; ');
  }
  // An option before an unknown command takes it as its value (--full rnu): the word is still the command meant.
  if (text === namedCommandsMessage) {
    const word = argv.find((arg, index) => !arg.startsWith('-') && argv[index - 1] !== '--log-format');
    if (word !== undefined) return unknownCommand(word);
  }
  const missingValue = /^Not enough arguments following: (.+)$/.exec(text);
  if (missingValue?.[1]) return `${dashed(missingValue[1])} needs a value`;
  const exclusive = /^Arguments (\S+) and (\S+) are mutually exclusive$/.exec(text);
  if (exclusive?.[1] && exclusive[2])
    return `${dashed(exclusive[1])} and ${dashed(exclusive[2])} cannot be used together`;
  const command = commandOf(argv);
  if (/^Not enough non-option arguments/.test(text) && (command === 'verify' || command === 'replay')) {
    const what = command === 'verify' ? 'check' : 'rebuild';
    return `${command} needs RUN_DIR, the run directory to ${what} (e.g. out/demo/runs/20261121T235500Z)`;
  }
  if (/^Not enough non-option arguments/.test(text) && command === 'view')
    return 'view needs what to show: a run directory (out/demo/runs/<run id>), an s3:// run, or out/demo/current';
  return text;
}

function unknownCommand(name: string): string {
  const meant = closestCommand(name);
  return `unknown command "${name}"${meant ? ` (did you mean ${meant}?)` : ''}`;
}

function optionName(arg: string): string {
  return (arg.split('=')[0] ?? arg).replace(/^-+(no-)?/, '');
}

function dashed(name: string): string {
  return name.length === 1 ? `-${name}` : `--${name}`;
}

function commandOf(argv: string[]): string | undefined {
  return argv.find((arg) => commandNames.includes(arg));
}
