/**
 * What one HTTP attempt means: a payload, a reason to retry, or a final typed error.
 * Messages name the operation, the study or response, and the fix; never the key.
 */
import {
  AuthError,
  type ErrorContext,
  HttpError,
  NetworkError,
  PayloadError,
  redactUrl,
  type StudyExportError,
} from '../errors.ts';
import type { Operation } from './resources.ts';

export interface RequestSpec {
  operation: Operation;
  /** Full request URL (query string included); messages show it redacted. */
  url: URL;
  query?: Record<string, string>;
  study?: string;
  response?: string;
}

export interface ClientIdentity {
  apiKey: string;
  apiKeyEnv: string;
}

/** A received HTTP answer, body read in full. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  url: string;
}

export type Outcome =
  | { kind: 'ok'; payload: unknown }
  | { kind: 'retry'; reason: string; retryAfterHeader?: string; fail: (attempts: number) => StudyExportError }
  | { kind: 'fail'; error: StudyExportError };

/** "list_responses for study "x"", "get_response for response "r" of study "x"". */
export function describeRequest(spec: RequestSpec): string {
  if (spec.response !== undefined) {
    return `${spec.operation} for response "${spec.response}" of study "${spec.study}"`;
  }
  if (spec.study !== undefined) return `${spec.operation} for study "${spec.study}"`;
  return spec.operation;
}

export function errorContext(spec: RequestSpec, status?: number): ErrorContext {
  const context: ErrorContext = { operation: spec.operation, url: redactUrl(spec.url) };
  if (spec.study !== undefined) context.study = spec.study;
  if (spec.response !== undefined) context.response = spec.response;
  if (status !== undefined) context.status = status;
  return context;
}

/** Removes the key from text that came from elsewhere (a server message may echo a header). */
export function scrub(text: string, identity: ClientIdentity): string {
  return identity.apiKey === '' ? text : text.split(identity.apiKey).join('***');
}

const networkReasons: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'timed out',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EPIPE: 'connection closed while sending',
};

/** A request that got no HTTP answer: always retried, then a NetworkError naming the URL and why. */
export function networkOutcome(spec: RequestSpec, error: unknown, identity: ClientIdentity): Outcome {
  const code = (error as { code?: unknown }).code;
  const reason = typeof code === 'string' ? code : 'ERR_NETWORK';
  const why =
    networkReasons[reason] ?? scrub(error instanceof Error ? error.message : String(error), identity);
  return {
    kind: 'retry',
    reason,
    fail: (attempts) =>
      new NetworkError(
        `${describeRequest(spec)}: could not get an answer from ${redactUrl(spec.url)} (${reason}: ${why}) ` +
          `after ${attempts} attempt${attempts === 1 ? '' : 's'}; check base_url and that the service is up`,
        { context: errorContext(spec), cause: error },
      ),
  };
}

/** Classifies an HTTP answer. */
export function answerOutcome(spec: RequestSpec, answer: RawAnswer, identity: ClientIdentity): Outcome {
  const { status } = answer;
  if (status >= 200 && status < 300) return payloadOutcome(spec, answer);
  if (status === 408 || status === 429 || status >= 500) return statusRetry(spec, answer);
  return { kind: 'fail', error: finalError(spec, answer, identity) };
}

function payloadOutcome(spec: RequestSpec, answer: RawAnswer): Outcome {
  const declared = Number(answer.headers['content-length']);
  // With content-encoding, Content-Length counts compressed bytes: compare only plain bodies.
  const plain = answer.headers['content-encoding'] === undefined;
  if (plain && Number.isFinite(declared) && answer.body.length < declared) {
    return payloadRetry(
      spec,
      'truncated',
      `body truncated: ${answer.body.length} of ${declared} bytes`,
      answer,
    );
  }
  const text = answer.body.toString('utf8');
  try {
    return { kind: 'ok', payload: JSON.parse(text) };
  } catch (cause) {
    const why = `body is not JSON (${(cause as Error).message}); it starts ${JSON.stringify(text.slice(0, 60))}`;
    return payloadRetry(spec, 'invalid_json', why, answer, cause);
  }
}

function payloadRetry(
  spec: RequestSpec,
  reason: string,
  why: string,
  answer: RawAnswer,
  cause?: unknown,
): Outcome {
  return {
    kind: 'retry',
    reason,
    fail: (attempts) =>
      new PayloadError(
        `${describeRequest(spec)}: ${why} from ${redactUrl(spec.url)} after ${attempts} attempts`,
        {
          context: errorContext(spec, answer.status),
          cause,
        },
      ),
  };
}

function statusRetry(spec: RequestSpec, answer: RawAnswer): Outcome {
  const header = answer.headers['retry-after'];
  const outcome: Outcome = {
    kind: 'retry',
    reason: String(answer.status),
    fail: (attempts) =>
      new HttpError(
        'E_RETRIES_EXHAUSTED',
        `${describeRequest(spec)}: the service kept answering HTTP ${answer.status} at ${redactUrl(spec.url)}; ` +
          `gave up after ${attempts} attempts (raise source.retries or try again later)`,
        { context: errorContext(spec, answer.status) },
      ),
  };
  if (typeof header === 'string') outcome.retryAfterHeader = header;
  return outcome;
}

/** The server's own words from an error body, short and without the key. */
function serverMessage(answer: RawAnswer, identity: ClientIdentity): string {
  const text = answer.body.toString('utf8').trim();
  let message = text;
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    const field = parsed.message ?? parsed.error ?? parsed.detail;
    if (typeof field === 'string') message = field;
  } catch {
    // not JSON: the text itself is the message
  }
  message = scrub(message, identity).replace(/\s+/g, ' ');
  return message.length > 200 ? `${message.slice(0, 200)}…` : message || '(no message)';
}

function finalError(spec: RequestSpec, answer: RawAnswer, identity: ClientIdentity): StudyExportError {
  const { status } = answer;
  const context = errorContext(spec, status);
  const where = redactUrl(spec.url);
  if (status === 401 || status === 403) {
    return new AuthError(
      `${describeRequest(spec)} was refused (HTTP ${status}): the API key in environment variable ` +
        `${identity.apiKeyEnv} was not accepted by ${new URL(where).origin}; set ${identity.apiKeyEnv} to a valid key`,
      { context },
    );
  }
  if (status === 404 && spec.operation === 'list_responses') {
    return new HttpError(
      'E_NOT_FOUND',
      `list_responses: study link_id "${spec.study}" was not found (HTTP 404 at ${where}). ` +
        'It may have been renamed: run `study-export studies` to list the studies and their current link_ids',
      { context },
    );
  }
  if (status === 404) {
    const what =
      spec.response !== undefined
        ? `response "${spec.response}" of study link_id "${spec.study}" was not found`
        : 'the study list was not found; check base_url';
    return new HttpError('E_NOT_FOUND', `${spec.operation}: ${what} (HTTP 404 at ${where})`, { context });
  }
  if (status === 400) {
    return new HttpError(
      'E_BAD_REQUEST',
      `${describeRequest(spec)} was rejected as a bad request (HTTP 400 at ${where}): ${serverMessage(answer, identity)}`,
      { context },
    );
  }
  if (status >= 300 && status < 400) {
    const location = answer.headers.location;
    const target = typeof location === 'string' ? redirectTarget(location, spec.url) : '(no location)';
    return new HttpError(
      'E_HTTP',
      `${describeRequest(spec)}: redirected (HTTP ${status}) from ${where} to ${target} on another host; ` +
        'not followed so that the API key is not sent there',
      { context },
    );
  }
  return new HttpError(
    'E_HTTP',
    `${describeRequest(spec)}: unexpected HTTP ${status} at ${where}: ${serverMessage(answer, identity)}`,
    { context },
  );
}

function redirectTarget(location: string, from: URL): string {
  try {
    return redactUrl(new URL(location, from));
  } catch {
    return '(unreadable location)';
  }
}
