/**
 * Help texts say what the code does: each command's --help lists exactly the options its
 * parser accepts, and what they name (formats, where the state lives) is what the code uses.
 */

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import yargs, { type Argv, type CommandModule } from 'yargs';
import { initCommand } from '../../src/cli/commands/init.ts';
import { replayCommand } from '../../src/cli/commands/replay.ts';
import { runCommand } from '../../src/cli/commands/run.ts';
import { sandboxCommand } from '../../src/cli/commands/sandbox.ts';
import { studiesCommand } from '../../src/cli/commands/studies.ts';
import { validateCommand } from '../../src/cli/commands/validate.ts';
import { verifyCommand } from '../../src/cli/commands/verify.ts';
import { viewCommand } from '../../src/cli/commands/view.ts';
import type { CliContext } from '../../src/cli/context.ts';
import { parseFormats } from '../../src/cli/usage.ts';
import { formats } from '../../src/config/schema.ts';
import { repoRoot, runCli } from '../helpers/cli.ts';

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
  view: viewCommand(context) as never,
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
      // What the help says is what parseFormats takes: each format, and xlsx only beside a table format.
      const text = describedAs(help, 'formats');
      expect(text).toContain('csv and/or parquet, plus xlsx for one workbook per study');
      expect(text).toContain('per study beside them');
      for (const format of formats) expect(text).toContain(format);
      const example = /e\.g\. ([\w,]+)/.exec(text)?.[1] ?? '';
      expect(parseFormats(example)).toEqual(example.split(','));
      expect(() => parseFormats('xlsx')).toThrow('xlsx needs csv or parquet beside it');
    }
    const state = describedAs(run.stdout, 'state');
    expect(state).toContain('state/ beside the runs, e.g. out/<name>/state/');
    expect(`${run.stdout}${replay.stdout}`).not.toContain('state.json');
    expect(replay.stdout).toMatch(/state \(the watermarks in\s+state\/\) and the current\/ dataset are left/);
  });
});

describe('docs/configuration.md', () => {
  it('lists for each command exactly the options it accepts (beside --help, --version, --log-format)', async () => {
    const page = await readFile(path.join(repoRoot, 'docs', 'configuration.md'), 'utf8');
    for (const [name, command] of Object.entries(commands)) {
      const section = page.split(new RegExp(`^### ${name}\\b.*$`, 'm'))[1]?.split(/^##/m)[0];
      expect(section, `a section "### ${name}" in docs/configuration.md`).toBeDefined();
      const documented = [...(section ?? '').matchAll(/^\| `(?:-\w, )?--([\w-]+)[^|]*\|/gm)]
        .flatMap((row) => [...(row[0].split('|')[1] ?? '').matchAll(/--([\w-]+)/g)].map((match) => match[1]))
        .filter((option) => option !== undefined && !option.startsWith('no-'))
        .sort();
      const accepted = acceptedOptions(command).filter(
        (option) => !['help', 'version', 'log-format'].includes(option),
      );
      expect(documented, name).toEqual(accepted);
    }
  });
});
