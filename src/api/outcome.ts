/**
 * What one API attempt means: a payload, a `TryAgain` (src/http/retry.ts), or a final typed
 * error; and the error of a request whose retries ran out. Messages name the operation, the
 * study or response, and the fix; never the key.
 */

import {
  AuthError,
  type ErrorContext,
  HttpError,
  NetworkError,
  PayloadError,
  type StudyExportError,
} from '../errors.ts';
import { RequestTimeoutError } from '../http/get.ts';
import { isRetryableStatus, networkReason, TryAgain } from '../http/retry.ts';
import { redact } from '../redact.ts';
import { type JsonArrayElements, splitJsonArray } from './json-array.ts';
import type { Operation } from './resources.ts';

export interface RequestSpec {
  operation: Operation;
  /** Full request URL (query string included); messages show it redacted. */
  url: URL;
  /** The path and query as sent, where `url` cannot hold them (a "." segment: client.ts requestPath). */
  path?: string;
  query?: Record<string, string>;
  study?: string;
  response?: string;
  /** A JSON array expected (a listing page): its elements are parsed one at a time. */
  byElement?: boolean;
}

export interface ClientIdentity {
  /** Name of the environment variable the key came from, for the message of a refused key. */
  apiKeyEnv: string;
}

/** A received HTTP answer, body read in full. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  url: string;
}

/** "list_responses for study "x"", "get_response for response "r" of study "x"". */
export function describeRequest(spec: RequestSpec): string {
  if (spec.response !== undefined) {
    return `${spec.operation} for response "${spec.response}" of study "${spec.study}"`;
  }
  if (spec.study !== undefined) return `${spec.operation} for study "${spec.study}"`;
  return spec.operation;
}

export function errorContext(spec: RequestSpec, status?: number): ErrorContext {
  const context: ErrorContext = { operation: spec.operation, url: redact(spec.url) };
  if (spec.study !== undefined) context.study = spec.study;
  if (spec.response !== undefined) context.response = spec.response;
  if (status !== undefined) context.status = status;
  return context;
}

const networkReasons: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'timed out',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EPIPE: 'connection closed while sending',
};

/** A request that got no (complete) HTTP answer: always worth another attempt. */
export function networkFailure(error: unknown, deadlineMs: number): TryAgain {
  if (error instanceof RequestTimeoutError && error.event === 'deadline') {
    const why = `no complete answer within ${deadlineMs} ms (source.deadline_ms)`;
    return new TryAgain('network', 'deadline', why, { cause: error });
  }
  const reason = networkReason(error);
  const why = networkReasons[reason] ?? redact(error instanceof Error ? error.message : String(error));
  return new TryAgain('network', reason, `${reason}: ${why}`, { cause: error });
}

/**
 * A 2xx body read: its payload parsed whole, or, for a request by element whose body holds a
 * well-formed array, its elements (src/api/json-array.ts), each parsed when taken.
 */
export type ReadBody =
  | { payload: unknown; elements?: undefined }
  | { payload?: undefined; elements: JsonArrayElements };

/**
 * The body of an HTTP answer. Throws TryAgain for what another attempt may fix (408, 429,
 * 5xx, truncated or non-JSON bodies) and a typed final error for the rest.
 */
export function readAnswer(spec: RequestSpec, answer: RawAnswer, identity: ClientIdentity): ReadBody {
  const { status } = answer;
  if (status >= 200 && status < 300) return readBody(answer, spec.byElement === true);
  if (isRetryableStatus(status)) {
    throw new TryAgain('status', String(status), `HTTP ${status}`, {
      status,
      retryAfter: answer.headers['retry-after'],
    });
  }
  throw finalError(spec, answer, identity);
}

function readBody(answer: RawAnswer, byElement: boolean): ReadBody {
  checkLength(answer);
  const elements = byElement ? splitJsonArray(answer.body) : null;
  return elements ? { elements } : { payload: parseWhole(answer) };
}

function checkLength(answer: RawAnswer): void {
  const declared = Number(answer.headers['content-length']);
  // With content-encoding, Content-Length counts compressed bytes: compare only plain bodies.
  const plain = answer.headers['content-encoding'] === undefined;
  if (plain && Number.isFinite(declared) && answer.body.length < declared) {
    throw new TryAgain('body', 'truncated', `body truncated: ${answer.body.length} of ${declared} bytes`, {
      status: answer.status,
    });
  }
}

function parseWhole(answer: RawAnswer): unknown {
  const text = answer.body.toString('utf8');
  try {
    return JSON.parse(text);
  } catch (cause) {
    const why = `body is not JSON (${(cause as Error).message}); it starts ${JSON.stringify(text.slice(0, 60))}`;
    throw new TryAgain('body', 'invalid_json', redact(why), { status: answer.status, cause });
  }
}

/** An answer cut off at source.max_body_mib: final, the same answer would come again. */
export function bodyTooLarge(spec: RequestSpec, maxBytes: number): PayloadError {
  return new PayloadError(
    `${describeRequest(spec)}: the answer from ${redact(spec.url)} is larger than source.max_body_mib ` +
      `(${maxBytes / (1024 * 1024)} MiB); stopped reading it`,
    { context: errorContext(spec) },
  );
}

/** The final error of a request whose attempts all failed with `failure`. */
export function giveUp(spec: RequestSpec, failure: TryAgain, attempts: number): StudyExportError {
  const where = redact(spec.url);
  const times = `${attempts} attempt${attempts === 1 ? '' : 's'}`;
  const context = errorContext(spec, failure.status);
  switch (failure.kind) {
    case 'status':
      return new HttpError(
        'E_RETRIES_EXHAUSTED',
        `${describeRequest(spec)}: the service kept answering HTTP ${failure.status} at ${where}; ` +
          `gave up after ${times} (raise source.retries or try again later)`,
        { context },
      );
    case 'network': {
      const what = failure.reason === 'deadline' ? 'too slow' : 'unreachable';
      return new NetworkError(
        `${describeRequest(spec)}: the service is ${what}: ${failure.message} at ${where}, after ${times}`,
        { context, cause: failure.cause },
      );
    }
    case 'body':
      return new PayloadError(`${describeRequest(spec)}: ${failure.message} from ${where} after ${times}`, {
        context,
        cause: failure.cause,
      });
  }
}

/** The server's own words from an error body, short and without the key. */
function serverMessage(answer: RawAnswer): string {
  const text = answer.body.toString('utf8').trim();
  let message = text;
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    const field = parsed.message ?? parsed.error ?? parsed.detail;
    if (typeof field === 'string') message = field;
  } catch {
    // not JSON: the text itself is the message
  }
  message = redact(message).replace(/\s+/g, ' ');
  return message.length > 200 ? `${message.slice(0, 200)}…` : message || '(no message)';
}

function finalError(spec: RequestSpec, answer: RawAnswer, identity: ClientIdentity): StudyExportError {
  const { status } = answer;
  const context = errorContext(spec, status);
  const where = redact(spec.url);
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
      `${describeRequest(spec)} was rejected as a bad request (HTTP 400 at ${where}): ${serverMessage(answer)}`,
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
    `${describeRequest(spec)}: unexpected HTTP ${status} at ${where}: ${serverMessage(answer)}`,
    { context },
  );
}

function redirectTarget(location: string, from: URL): string {
  try {
    return redact(new URL(location, from));
  } catch {
    return '(unreadable location)';
  }
}
