/**
 * The one place errors are reported: a line on stderr ("study-export: <message>"), a hint
 * where one helps, and the exit code. Secrets registered here are masked in everything
 * printed (and URLs lose their query strings), as a last line of defence behind the
 * error messages themselves.
 */
import { exitCodes, StudyExportError, SystemError } from '../errors.ts';
import { redact } from '../redact.ts';
import { describeSystemError } from '../util/system-errors.ts';
import type { LogFormat } from './context.ts';
import { jsonEvent } from './json-event.ts';
import { UsageError } from './usage.ts';

/**
 * A finished run: 0 complete (or a dry run's plan, or nothing new), 3 partial, or committed
 * with part of its publication unfinished (current/, the state: the next run completes it).
 */
export function runExitCode(
  status: 'complete' | 'partial' | 'planned' | 'unchanged',
  unfinished: readonly string[] = [],
): number {
  return status === 'partial' || unfinished.length > 0 ? exitCodes.partial : exitCodes.complete;
}

/** `verify`: 0 when the run checks out, 1 when it found problems. */
export function verifyExitCode(problems: number): number {
  return problems === 0 ? exitCodes.complete : exitCodes.failed;
}

/** Stopped by a signal: the shell's code for it. */
export function signalExitCode(signal: 'SIGINT' | 'SIGTERM'): number {
  return exitCodes[signal];
}

export interface ErrorOutput {
  write(text: string): unknown;
}

/** Prints the error once and returns the exit code it maps to. */
export function reportError(
  thrown: unknown,
  stderr: ErrorOutput,
  env: NodeJS.ProcessEnv,
  format: LogFormat = 'text',
): number {
  // A file-system error nobody named on its way up is still said in plain words.
  const error = describeSystemError(thrown);
  if (format === 'json') return reportErrorAsJson(error, stderr);
  const debug = /(^|,)\s*study-export\s*(,|$)/.test(env.DEBUG ?? '') || env.DEBUG === '*';
  if (error instanceof StudyExportError) {
    const lines = [`study-export: ${indentRest(error.message)}`];
    const hint = hintFor(error);
    if (hint) lines.push(`  hint: ${hint}`);
    if (debug && error.stack) lines.push(error.stack);
    stderr.write(`${redact(lines.join('\n'))}\n`);
    return error.exitCode;
  }
  const message = error instanceof Error ? error.message : String(error);
  const lines = [`study-export: unexpected error: ${indentRest(message)}`];
  if (debug && error instanceof Error && error.stack) lines.push(error.stack);
  else lines.push('  hint: run again with DEBUG=study-export for the stack trace, and report it');
  stderr.write(`${redact(lines.join('\n'))}\n`);
  return exitCodes.failed;
}

/** --log-format json: the error as one JSON line, its code, exit code, context and hint. */
function reportErrorAsJson(error: unknown, stderr: ErrorOutput): number {
  const known = error instanceof StudyExportError ? error : null;
  const exitCode = known?.exitCode ?? exitCodes.failed;
  const hint = known ? hintFor(known) : undefined;
  const fields = {
    code: known?.code ?? 'E_UNEXPECTED',
    message: error instanceof Error ? error.message : String(error),
    exit_code: exitCode,
    ...(known && Object.keys(known.context).length > 0 ? { context: known.context } : {}),
    ...(hint === undefined ? {} : { hint }),
  };
  stderr.write(`${redact(jsonEvent('error', fields))}\n`);
  return exitCode;
}

function indentRest(message: string): string {
  return message.split('\n').join('\n  ');
}

function hintFor(error: StudyExportError): string | undefined {
  if (error instanceof UsageError) {
    return `see \`study-export ${error.command ? `${error.command} ` : ''}--help\``;
  }
  switch (error.code) {
    case 'E_CONFIG':
      if (
        /environment variable \S+ is not set/.test(error.message) &&
        error.context.operation === 'api key'
      ) {
        return 'export the key in that variable, or set source.base_url to "sandbox" to try the embedded service';
      }
      return undefined;
    case 'E_SCHEMA_CHANGED':
      return 'exit 4: nothing was committed; --accept-schema-change commits the next run with these changes';
    case 'E_BUSY':
      return 'exit 75: nothing was written; a scheduler should try again later';
    case 'E_AUTH':
      return 'the key is never printed; check the variable holds the key for this base_url';
    case 'E_NETWORK':
      return 'the service did not answer (exit 1): run again once it does; if it never does, check source.base_url and the network';
    case 'E_RETRIES_EXHAUSTED':
      return 'the service kept failing; try later, or lower --concurrency';
    case 'E_SYSTEM':
      return error instanceof SystemError ? permissionHint(error) : undefined;
    default:
      return undefined;
  }
}

/** Where the user lacks the right to write: which option points elsewhere. */
function permissionHint(error: SystemError): string | undefined {
  if (!['EACCES', 'EPERM', 'EROFS'].includes(error.errno)) return undefined;
  if (error.message.startsWith('state file')) {
    return 'give --state a file this user can write, or leave --state out (the state then lives beside the runs)';
  }
  if (error.message.startsWith('output folder')) {
    return 'choose a folder this user can write with --out DIR (or output.dir in the pipeline file), or let this user write to that one';
  }
  return 'this user may not write there: check its permissions (ls -ld), or choose another folder with --out DIR';
}
