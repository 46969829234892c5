/**
 * The progress reporter the command line chooses: live bars on an interactive terminal,
 * plain periodic lines for CI logs and pipes, or one JSON object per event with
 * --log-format json. All of them write to stderr; the final summary goes to stdout.
 */
import type { ProgressReporter } from '../pipeline/progress.ts';
import { BarReporter } from './bar-reporter.ts';
import type { LogFormat } from './context.ts';
import { JsonReporter } from './json-reporter.ts';
import { LineReporter } from './line-reporter.ts';
import type { ReporterOptions } from './reporter-base.ts';

export type { ReporterOptions } from './reporter-base.ts';
export { formatWarning } from './reporter-base.ts';

/** A progress reporter that can also say what the command is starting. */
export type CliReporter = ProgressReporter & { note(line: string): void };

export function createReporter(options: ReporterOptions & { format?: LogFormat }): CliReporter {
  if (options.format === 'json') return new JsonReporter(options);
  return options.tty && !options.ci ? new BarReporter(options) : new LineReporter(options);
}
