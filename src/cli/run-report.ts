/**
 * What `run` and `replay` show while a run goes and once it ends: the progress reporter the
 * log format and terminal call for, the summary (stdout; also a JSON event with
 * --log-format json), exit code 3 for a partial run, and what an interrupt leaves behind.
 */
import type { ProgressReporter } from '../pipeline/progress.ts';
import type { PreviousRun, RunResult } from '../pipeline/run.ts';
import { redact } from '../redact.ts';
import { type CliContext, isCI, type LogFormat } from './context.ts';
import { jsonEvent } from './json-event.ts';
import { runExitCode, signalExitCode } from './report.ts';
import { createReporter } from './reporters.ts';
import { formatSummary, nothingNewLine } from './summary.ts';

export async function reportRun(
  context: CliContext,
  format: LogFormat,
  /** What the command is starting, said at once: the first seconds are never silent. */
  startLine: string,
  execute: (reporter: ProgressReporter, onPreviousRun: (previous: PreviousRun) => void) => Promise<RunResult>,
): Promise<void> {
  const reporter = createReporter({
    format,
    tty: Boolean(context.stderr.isTTY),
    ci: isCI(context.env),
    stream: context.stderr,
  });
  reporter.note(startLine);
  // Until the pipeline has read it, an interrupt cannot say which run latest names.
  let previous: PreviousRun | undefined;
  const stopOnSignal = interruptHandler(reporter, context, format, () => previous);
  let result: RunResult;
  try {
    result = await execute(reporter, (read) => {
      previous = read;
    });
  } finally {
    stopOnSignal.remove();
    reporter.stop();
  }
  // One elapsed time, the command's own (start-up and sandbox included), not the pipeline's.
  if (context.elapsedMs) result = { ...result, durationMs: Math.round(context.elapsedMs()) };
  context.exitCode = runExitCode(result.status, result.unfinished);
  context.stdout.write(`${formatSummary(result)}\n`);
  // Committed, but not all of its publication: said as errors are, after the summary.
  for (const message of result.unfinished ?? []) {
    context.stderr.write(
      format === 'json'
        ? `${redact(jsonEvent('unfinished', { message, exit_code: context.exitCode }))}\n`
        : `${redact(`study-export: ${message}`)}\n`,
    );
  }
  if (format === 'json') {
    context.stderr.write(`${redact(jsonEvent('summary', summaryFields(result, context.exitCode)))}\n`);
  }
}

/**
 * Ctrl-C or a CI cancel: put the terminal back (bars hide the cursor) and say what state the
 * output is in, then exit with the shell's code for the signal (130 SIGINT, 143 SIGTERM).
 */
function interruptHandler(
  reporter: ProgressReporter,
  context: CliContext,
  format: LogFormat,
  previousRun: () => PreviousRun | undefined,
): { remove(): void } {
  const onSignal = (signal: NodeJS.Signals) => {
    reporter.stop();
    const exitCode = signalExitCode(signal === 'SIGINT' ? 'SIGINT' : 'SIGTERM');
    const previous = previousRun();
    const message = previous?.committedNow
      ? `interrupted by ${signal} after run ${previous.runId} was committed: ${previous.pointer} names it, and the next run completes what it left of current/ and the state`
      : `interrupted by ${signal}: this run was not committed and its temporary folder is removed; ${whatLatestNames(previous)}`;
    context.stderr.write(
      format === 'json'
        ? `${jsonEvent('interrupted', { signal, message, exit_code: exitCode })}\n`
        : `study-export: ${message}\n`,
    );
    process.exit(exitCode);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    remove() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** What the output still holds after an interrupt: the run latest names, or none yet. */
export function whatLatestNames(previous: PreviousRun | undefined): string {
  if (previous === undefined) return 'latest was not changed';
  if (previous.runId === null) return `there is no complete run yet (no ${previous.pointer})`;
  return `${previous.pointer} still names run ${previous.runId}`;
}

/** The summary event of --log-format json: what the text summary says, as fields. */
function summaryFields(result: RunResult, exitCode: number): object {
  return {
    status: result.status,
    exit_code: exitCode,
    run_dir: result.runDir,
    tables: Object.fromEntries(result.tables.map((table) => [table.table, table.rows])),
    files: result.files.length,
    bytes: result.files.reduce((sum, file) => sum + file.bytes, 0),
    warnings: result.warnings,
    rejects: result.rejects,
    media_failed: result.mediaFailed,
    schema_changes: result.schemaChanges?.length ?? 0,
    ...(result.unfinished === undefined ? {} : { unfinished: result.unfinished }),
    ...(result.sample === undefined ? {} : { sample: result.sample }),
    ...(result.filled === undefined ? {} : { current_formats_added: result.filled }),
    duration_ms: result.durationMs,
    ...(result.plan === undefined ? {} : { plan: result.plan }),
    ...(result.unchanged === undefined
      ? {}
      : {
          message: nothingNewLine(result.unchanged),
          since_run: result.unchanged.sinceRun,
          latest: result.unchanged.latest,
          studies_checked: result.unchanged.studies,
          requests: result.unchanged.requests,
          ...(result.unchanged.filled === undefined
            ? {}
            : { current_formats_added: result.unchanged.filled }),
        }),
  };
}
