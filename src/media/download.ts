/**
 * One signed URL to one body: into memory when its Content-Length fits the memory budget,
 * else streamed to a temporary file. A retry loop of our own: got's stream retries neither
 * resume nor run hooks, so each attempt is a fresh request with `retry: {limit: 0}`,
 * written from the start.
 *
 * Media hosts get a plain got instance: no x-api-key or any other API client header ever
 * reaches them, and redirects off them are followed with credential headers stripped.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { finished, pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import got, { type Request, RequestError } from 'got';
import { type ErrorContext, HttpError, MediaError, NetworkError, redactUrl } from '../errors.ts';
import type { MemoryBudget } from './memory-budget.ts';
import type { MediaBody } from './types.ts';

/** A signed URL and when (on the caller's clock) the detail call that issued it was made. */
export interface SignedLink {
  url: string;
  issuedAt: number;
}

export interface DownloadOptions {
  link: SignedLink;
  /** Fresh link for the same file (the pipeline calls the single-response API again). */
  refresh: (stale: SignedLink) => Promise<SignedLink>;
  /** The temporary file used when the body is not kept in memory. */
  dest: string;
  /**
   * Keeps bodies in memory when their Content-Length fits; without it every body goes to
   * `dest`. The caller gives a memory body's bytes back once it is done with it.
   */
  memory?: MemoryBudget;
  /** Further attempts after the first, for network errors, 408/429/5xx and short bodies. */
  retries: number;
  /** Connect, first-byte and idle-socket timeout of one attempt. */
  timeoutMs: number;
  /** Refresh before using a link older than this (it expires one hour after issue). */
  maxLinkAgeMs?: number;
  /** Refreshes allowed for one file before its 403s are taken as final. */
  maxRefreshes?: number;
  /** First backoff delay; doubles on each retry. */
  backoffMs?: number;
  now?: () => number;
  onBytes?: (n: number) => void;
  onRetry?: () => void;
  /** Study and response, for error messages. */
  context?: ErrorContext;
}

export interface DownloadedFile {
  body: MediaBody;
  bytes: number;
  sha256: string;
  contentType: string | null;
  /** The link the file finally came from. */
  link: SignedLink;
}

export const defaultMaxLinkAgeMs = 50 * 60 * 1000;
const defaultMaxRefreshes = 3;
const defaultBackoffMs = 250;
const maxBackoffMs = 30_000;

/** Headers that must never follow a redirect, although we never set them in the first place. */
const credentialHeaders = ['x-api-key', 'authorization', 'cookie', 'proxy-authorization'];

/** A got instance with nothing of the API client's: no key, no hooks, no retries, raw bytes. */
export const mediaHttp = got.extend({
  headers: { 'user-agent': 'study-export media' },
  retry: { limit: 0 },
  decompress: false,
  followRedirect: true,
  maxRedirects: 5,
  hooks: {
    beforeRedirect: [
      (options) => {
        for (const name of credentialHeaders) delete options.headers[name];
        options.username = '';
        options.password = '';
      },
    ],
  },
});

/** The host refused the signed link (expired or tampered): get a fresh one. */
class LinkRefusedError extends Error {}

/** Worth another attempt: network failures, 408/429/5xx, short bodies. */
class TransientError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly retryAfterMs: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The body ended before Content-Length said it would (a dropped or truncated response). */
class ShortBodyError extends TransientError {}

/** Removes query strings from any URL inside a message (signed URLs must not leak). */
export function scrubUrls(text: string): string {
  return text.replace(/(https?:\/\/[^\s?#"'<>]*)[?#][^\s"'<>]*/g, '$1');
}

/**
 * Counts and hashes the body as it flows to the file. A 'data' listener beside the pipe,
 * not a Transform: one stream hop less per chunk, which was a sizeable part of the
 * download's CPU on ~1 MB files.
 */
function measure(body: Request, onBytes?: (n: number) => void) {
  const hash = createHash('sha256');
  const measured = { bytes: 0, sha256: () => hash.digest('hex') };
  body.on('data', (chunk: Buffer) => {
    hash.update(chunk);
    measured.bytes += chunk.length;
    onBytes?.(chunk.length);
  });
  return measured;
}

function retryAfterMs(value: string | undefined): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** Classifies a non-2xx answer: refresh, retry, or give up. */
function statusError(request: Request, status: number, url: string, context: ErrorContext): Error {
  request.destroy();
  const where = `GET ${redactUrl(url)} answered ${status}`;
  if (status === 403) return new LinkRefusedError(where);
  if (isRetryableStatus(status)) {
    const header = request.response?.headers['retry-after'];
    return new TransientError(where, status, retryAfterMs(header));
  }
  const code = status === 404 ? 'E_NOT_FOUND' : status === 400 ? 'E_BAD_REQUEST' : 'E_HTTP';
  return new HttpError(code, where, { context: { ...context, url: redactUrl(url), status } });
}

/** A body received and its size; its SHA-256 is asked for once the size is known to be right. */
interface Received {
  body: MediaBody;
  bytes: number;
  sha256(): string;
}

/** Streams the body to `dest`, hashing and counting each chunk on the way. */
async function receiveToFile(
  request: Request,
  dest: string,
  onBytes?: (n: number) => void,
): Promise<Received> {
  // The pipe attaches first; both listeners see every chunk (flowing starts on next tick).
  const written = pipeline(request, createWriteStream(dest));
  const measured = measure(request, onBytes);
  await written;
  return { body: { kind: 'file', path: dest }, bytes: measured.bytes, sha256: measured.sha256 };
}

/**
 * Copies the body into one buffer of the announced length (no chunk list, no concat) and
 * hashes it whole once it is complete. (Hashing through WebCrypto on the thread pool was
 * tried: it copies the buffer first and measured no faster.)
 */
async function receiveToMemory(
  request: Request,
  length: number,
  onBytes?: (n: number) => void,
): Promise<Received> {
  const data = Buffer.allocUnsafeSlow(length);
  let bytes = 0;
  request.on('data', (chunk: Buffer) => {
    if (bytes + chunk.length <= length) chunk.copy(data, bytes);
    bytes += chunk.length;
    onBytes?.(chunk.length);
  });
  await finished(request, { writable: false });
  const sha256 = () => createHash('sha256').update(data).digest('hex');
  return { body: { kind: 'memory', data }, bytes, sha256 };
}

/**
 * One attempt: stream the body to memory (when the budget takes its Content-Length) or to
 * `dest`, hashing and counting; checks Content-Length.
 */
async function attempt(url: string, options: DownloadOptions): Promise<Omit<DownloadedFile, 'link'>> {
  const context = options.context ?? {};
  const request = mediaHttp.stream(url, {
    throwHttpErrors: false,
    timeout: { connect: options.timeoutMs, response: options.timeoutMs, socket: options.timeoutMs },
  });
  try {
    const [response] = (await once(request, 'response')) as [
      { statusCode: number; headers: Record<string, string | string[] | undefined> },
    ];
    if (response.statusCode < 200 || response.statusCode > 299) {
      throw statusError(request, response.statusCode, url, context);
    }
    const lengthHeader = response.headers['content-length'];
    const expected = typeof lengthHeader === 'string' ? Number(lengthHeader) : undefined;
    const contentType = response.headers['content-type'];
    const known = expected !== undefined && Number.isFinite(expected);
    const inMemory = known && options.memory?.tryTake(expected) === true;
    try {
      const received = inMemory
        ? await receiveToMemory(request, expected, options.onBytes)
        : await receiveToFile(request, options.dest, options.onBytes);
      if (known && received.bytes !== expected) {
        throw new ShortBodyError(
          `GET ${redactUrl(url)} sent ${received.bytes} of ${expected} bytes`,
          undefined,
          undefined,
        );
      }
      return {
        body: received.body,
        bytes: received.bytes,
        sha256: received.sha256(),
        contentType: typeof contentType === 'string' ? contentType : null,
      };
    } catch (error) {
      // Nothing of a failed attempt is kept: a later attempt may go to memory instead.
      if (inMemory) options.memory?.give(expected);
      else await rm(options.dest, { force: true });
      throw error;
    }
  } catch (error) {
    request.destroy();
    throw classify(error, url);
  }
}

/** Our own errors pass through; anything from got or the socket is a transient failure. */
function classify(error: unknown, url: string): Error {
  if (
    error instanceof LinkRefusedError ||
    error instanceof TransientError ||
    error instanceof HttpError ||
    error instanceof MediaError
  ) {
    return error;
  }
  // A local file error (disk full, no permission) is not the host's fault: no retry.
  if (error instanceof Error && !(error instanceof RequestError) && 'syscall' in error) {
    return new MediaError(`could not write the temporary file: ${error.message}`, { cause: error });
  }
  const message = scrubUrls(error instanceof Error ? error.message : String(error));
  return new TransientError(`GET ${redactUrl(url)} failed: ${message}`, undefined, undefined, {
    cause: error,
  });
}

function backoff(retry: number, options: DownloadOptions, hint: number | undefined): number {
  const base = (options.backoffMs ?? defaultBackoffMs) * 2 ** retry;
  const jittered = base / 2 + Math.random() * (base / 2);
  return Math.min(maxBackoffMs, hint ?? jittered);
}

/** The final error of a file, with study, response and the URL without its query string. */
function giveUp(error: Error, url: string, attempts: number, options: DownloadOptions): Error {
  const context = { ...options.context, url: redactUrl(url) };
  if (error instanceof HttpError || error instanceof MediaError) return error;
  if (error instanceof LinkRefusedError) {
    return new MediaError(`${error.message} after ${attempts} attempts with refreshed links`, {
      context: { ...context, status: 403 },
    });
  }
  const status = error instanceof TransientError ? error.status : undefined;
  const message = `${error.message} (gave up after ${attempts} attempts)`;
  if (status !== undefined)
    return new HttpError('E_RETRIES_EXHAUSTED', message, { context: { ...context, status } });
  if (error instanceof ShortBodyError) return new MediaError(message, { context });
  return new NetworkError(message, { context, cause: error.cause });
}

/**
 * Downloads `options.link` into memory or to `options.dest`, refreshing the link when it
 * is old or refused (403) and retrying transient failures with backoff. Each failed
 * attempt removes its partial file, so `dest` exists only when the body is that file.
 */
export async function downloadMedia(options: DownloadOptions): Promise<DownloadedFile> {
  const now = options.now ?? Date.now;
  const maxAge = options.maxLinkAgeMs ?? defaultMaxLinkAgeMs;
  const maxRefreshes = options.maxRefreshes ?? defaultMaxRefreshes;
  let link = options.link;
  let retries = 0;
  let refreshes = 0;
  let attempts = 0;
  for (;;) {
    if (now() - link.issuedAt >= maxAge && refreshes < maxRefreshes) {
      refreshes++;
      link = await options.refresh(link);
    }
    attempts++;
    try {
      const result = await attempt(link.url, options);
      return { ...result, link };
    } catch (error) {
      const failure = error as Error;
      if (failure instanceof LinkRefusedError && refreshes < maxRefreshes) {
        refreshes++;
        link = await options.refresh(link);
        continue;
      }
      if (failure instanceof TransientError && retries < options.retries) {
        await sleep(backoff(retries, options, failure.retryAfterMs));
        retries++;
        options.onRetry?.();
        continue;
      }
      throw giveUp(failure, link.url, attempts, options);
    }
  }
}
