/**
 * Typed errors and the product's exit codes. Each error carries a stable code, the context it
 * happened in (study, response, URL without its query string), its cause and its exit code.
 * They are thrown where things fail and reported once, at the edge (src/cli/report.ts, which
 * also maps a finished run, a failed verify and a signal to their codes).
 */

export interface ErrorContext {
  operation?: string;
  study?: string;
  response?: string;
  /** Always without its query string: signed URLs must not leak into logs. */
  url?: string;
  file?: string;
  status?: number;
}

/** Every exit code of the product, named once. */
export const exitCodes = {
  complete: 0,
  /** Failed: nothing committed (an unreachable service, a run that could not be written, verify problems). */
  failed: 1,
  /** Usage, configuration or authentication: fix the command, the pipeline file or the key. */
  usage: 2,
  /**
   * Finished but partial: rejects, failed media or a study that could not be read, all in the
   * manifest; or committed, but its publication (state, current/) failed: the next run completes it.
   */
  partial: 3,
  /** Stopped by a rule of the pipeline file before committing (schema.on_change: fail). */
  stoppedByRule: 4,
  /** EX_TEMPFAIL (sysexits.h): another run holds the output's lock; try again later. */
  busy: 75,
  /** The shell's codes for the signals (128 + signal number). */
  SIGINT: 130,
  SIGTERM: 143,
} as const;

/** What an error ends the process with. */
export type ExitCode =
  | typeof exitCodes.failed
  | typeof exitCodes.usage
  | typeof exitCodes.stoppedByRule
  | typeof exitCodes.busy;

export class StudyExportError extends Error {
  readonly code: string;
  readonly context: ErrorContext;
  readonly exitCode: ExitCode = exitCodes.failed;

  constructor(code: string, message: string, options: { context?: ErrorContext; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.context = options.context ?? {};
  }
}

/** The pipeline file or the command line is wrong. */
export class ConfigError extends StudyExportError {
  override readonly exitCode = exitCodes.usage;
  constructor(message: string, options: { context?: ErrorContext; cause?: unknown } = {}) {
    super('E_CONFIG', message, options);
  }
}

/**
 * Another run (or `erase`, `describe`) holds the output's lock: nothing is wrong with the
 * command, it only came early. Exit 75 (EX_TEMPFAIL), which a scheduler retries.
 */
export class BusyError extends StudyExportError {
  override readonly exitCode = exitCodes.busy;
  constructor(message: string, options: { context?: ErrorContext; cause?: unknown } = {}) {
    super('E_BUSY', message, options);
  }
}

/**
 * The service's schema changed under `schema.on_change: fail`: the run stopped before
 * committing anything, and its message names every change.
 */
export class SchemaChangeError extends StudyExportError {
  override readonly exitCode = exitCodes.stoppedByRule;
  constructor(message: string, options: { context?: ErrorContext; cause?: unknown } = {}) {
    super('E_SCHEMA_CHANGED', message, options);
  }
}

/** The service refused the key (401/403 on base_url). */
export class AuthError extends StudyExportError {
  override readonly exitCode = exitCodes.usage;
  constructor(message: string, options: { context?: ErrorContext; cause?: unknown } = {}) {
    super('E_AUTH', message, options);
  }
}

/** An HTTP answer the client will not retry (400, 404) or gave up on (retries exhausted). */
export class HttpError extends StudyExportError {
  readonly status: number | undefined;
  constructor(
    code: 'E_NOT_FOUND' | 'E_BAD_REQUEST' | 'E_HTTP' | 'E_RETRIES_EXHAUSTED',
    message: string,
    options: { context?: ErrorContext; cause?: unknown } = {},
  ) {
    super(code, message, options);
    this.status = options.context?.status;
  }
}

/**
 * The service could not be reached (DNS, refused, reset, timeouts) after retries: an outage,
 * not a configuration mistake, so exit 1. One record or one study's listing lost this way is
 * a reject of that study instead (exit 3); only the study list failing ends the run.
 */
export class NetworkError extends StudyExportError {
  constructor(message: string, options: { context?: ErrorContext; cause?: unknown } = {}) {
    super('E_NETWORK', message, options);
  }
}

/** A body that is not JSON, or is truncated, after retries. */
export class PayloadError extends StudyExportError {
  constructor(message: string, options: { context?: ErrorContext; cause?: unknown } = {}) {
    super('E_PAYLOAD', message, options);
  }
}

/** A media file that could not be archived after retries. */
export class MediaError extends StudyExportError {
  constructor(message: string, options: { context?: ErrorContext; cause?: unknown } = {}) {
    super('E_MEDIA', message, options);
  }
}

/** A run directory problem: verify failures, a run that could not be committed. */
export class RunError extends StudyExportError {
  constructor(message: string, options: { context?: ErrorContext; cause?: unknown } = {}) {
    super('E_RUN', message, options);
  }
}

/**
 * The operating system refused a file operation: a full disk, a missing permission, a
 * path that is a file. Exit 2 when the path is the user's to fix (an output folder, the
 * --state file), 1 when the machine is (disk space, open files).
 */
export class SystemError extends StudyExportError {
  override readonly exitCode: ExitCode;
  /** The errno code, e.g. ENOSPC. */
  readonly errno: string;
  constructor(
    errno: string,
    message: string,
    options: { exitCode: ExitCode; context?: ErrorContext; cause?: unknown },
  ) {
    super('E_SYSTEM', message, options);
    this.errno = errno;
    this.exitCode = options.exitCode;
  }
}
