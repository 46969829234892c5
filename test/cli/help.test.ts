/**
 * Help texts say what the code does: each command's --help lists exactly the options its
 * parser accepts, and what they name (formats, where the state lives) is what the code uses.
 */

import { describe, expect, it } from 'vitest';
import yargs, { type Argv, type CommandModule } from 'yargs';
import { initCommand } from '../../src/cli/commands/init.ts';
import { replayCommand } from '../../src/cli/commands/replay.ts';
import { runCommand } from '../../src/cli/commands/run.ts';
import { sandboxCommand } from '../../src/cli/commands/sandbox.ts';
import { studiesCommand } from '../../src/cli/commands/studies.ts';
import { validateCommand } from '../../src/cli/commands/validate.ts';
import { verifyCommand } from '../../src/cli/commands/verify.ts';
import type { CliContext } from '../../src/cli/context.ts';
import { formats } from '../../src/config/schema.ts';
import { runCli } from './helpers.ts';

interface YargsOptions {
  key: Record<string, unknown>;
  alias: Record<string, string[]>;
}

const context = {} as CliContext;
const commands: Record<string, CommandModule<object, never>> = {
  init: initCommand(context) as never,
  run: runCommand(context) as never,
  replay: replayCommand(context) as never,
  studies: studiesCommand(context) as never,
  sandbox: sandboxCommand() as never,
  validate: validateCommand(context) as never,
  verify: verifyCommand(context) as never,
};

/** The long options a command's parser accepts (strict mode rejects every other one). */
function acceptedOptions(command: CommandModule<object, never>): string[] {
  const builder = command.builder as (parser: Argv) => Argv;
  // getOptions is yargs' own (untyped) record of what the parser accepts.
  const parser = builder(yargs([])) as Argv & { getOptions(): YargsOptions };
  const options = parser.getOptions();
  const aliases = new Set(Object.values(options.alias).flat());
  const positionals = /[<[](\w+)[>\]]/g;
  const named = new Set([...String(command.command).matchAll(positionals)].map((match) => match[1]));
  return [...Object.keys(options.key), 'log-format']
    .filter((key) => !aliases.has(key) && !named.has(key))
    .sort();
}

/** The long options a --help text lists under "Options:". */
function listedOptions(help: string): string[] {
  const section = help.split(/^Options:$/m)[1]?.split(/^\S/m)[0] ?? '';
  return [...section.matchAll(/^ {2}(?:-\w, |\s{4})--([\w-]+)/gm)].map((match) => match[1] ?? '').sort();
}

/** An option's description in a --help text (wrapped lines joined). */
function describedAs(help: string, option: string): string {
  const lines = help.split('\n');
  const at = lines.findIndex((line) => new RegExp(`^ {2}(?:-\\w, |\\s{4})--${option}\\b`).test(line));
  expect(at, `--${option} in\n${help}`).toBeGreaterThanOrEqual(0);
  const text = [lines[at] ?? ''];
  for (const line of lines.slice(at + 1)) {
    if (/^ {2}(-\w, |\s{4})--/.test(line) || line.trim() === '') break;
    text.push(line);
  }
  return text
    .map((line) => line.replace(/\[(string|boolean|number|array)\]|\[choices:.*$|\[default:.*$/g, '').trim())
    .join(' ')
    .replace(/^(-\w, )?--[\w-]+\s+/, '');
}

describe('--help of each command', () => {
  it('lists exactly the options the command accepts', async () => {
    const helps = await Promise.all(Object.keys(commands).map((name) => runCli([name, '--help'])));
    Object.entries(commands).forEach(([name, command], index) => {
      const help = helps[index];
      expect(help?.code, name).toBe(0);
      expect(listedOptions(help?.stdout ?? ''), name).toEqual(acceptedOptions(command));
    });
  });

  it('names the formats the schema has, where the state lives, and what replay leaves alone', async () => {
    const [run, replay] = await Promise.all([runCli(['run', '--help']), runCli(['replay', '--help'])]);
    for (const help of [run.stdout, replay.stdout]) {
      const text = describedAs(help, 'formats');
      const named = /one or more of ([\w, ]+?), comma-separated/.exec(text)?.[1]?.split(', ');
      expect(named, text).toEqual([...formats]);
    }
    const state = describedAs(run.stdout, 'state');
    expect(state).toContain('state/ beside the runs, e.g. out/<name>/state/');
    expect(`${run.stdout}${replay.stdout}`).not.toContain('state.json');
    expect(replay.stdout).toMatch(/state \(the watermarks in\s+state\/\) and the current\/ dataset are left/);
  });
});
