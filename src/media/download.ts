/**
 * One signed URL to one body: into memory when its Content-Length fits the memory budget,
 * else streamed to a temporary file. Retries are the shared policy and loop of
 * src/http/retry.ts: each attempt is a fresh request (src/http/get.ts), written from the start.
 * A 403 renews the link inside the attempt; it is not a retry.
 *
 * Media hosts get plain requests (src/http/get.ts): no x-api-key or any other API client header
 * ever reaches them.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { finished, pipeline } from 'node:stream/promises';
import { type ErrorContext, HttpError, MediaError, NetworkError, type StudyExportError } from '../errors.ts';
import { type GetResponse, httpGet } from '../http/get.ts';
import {
  isRetryableStatus,
  networkReason,
  RetryCounts,
  type RetryPolicy,
  TryAgain,
  withRetries,
} from '../http/retry.ts';
import { redact } from '../redact.ts';
import type { HashingThread } from './hashing-thread.ts';
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
   * `dest`. The caller gives a memory body's buffer back once it is done with it.
   */
  memory?: MemoryBudget;
  /** The shared retry policy (network errors, 408/429/5xx and short bodies are retried). */
  policy: RetryPolicy;
  /** Hashes bodies (in memory or in `dest`) off the event loop; without it they are hashed here. */
  hashing?: HashingThread;
  /** Where retries are counted (the media stage's counts, in the manifest). */
  counts?: RetryCounts;
  /** Connect, first-byte and idle-socket timeout of one attempt. */
  timeoutMs: number;
  /** The whole of one attempt (media.deadline_ms; default one hour). */
  deadlineMs?: number;
  /** Largest body accepted when it announces no smaller Content-Length (media.max_file_mib; default 4 GiB). */
  maxFileBytes?: number;
  /** Refresh before using a link older than this (it expires one hour after issue). */
  maxLinkAgeMs?: number;
  /** Refreshes allowed for one file before its 403s are taken as final. */
  maxRefreshes?: number;
  now?: () => number;
  onBytes?: (n: number) => void;
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
/** The only header a media host gets. */
const mediaHeaders = { 'user-agent': 'study-export media' };

/** The longest one attempt may take, body included. */
const defaultDeadlineMs = 60 * 60 * 1000;
const MiB = 1024 * 1024;
const defaultMaxFileBytes = 4096 * MiB;

/** The host refused the signed link (expired or tampered): get a fresh one. */
class LinkRefusedError extends Error {}

/**
 * Counts the body as it flows to the file, and hashes it unless the hashing thread will
 * read the file once it is complete. A 'data' listener beside the pipe, not a Transform:
 * one stream hop less per chunk.
 */
function measure(body: IncomingMessage, limit: BodyLimit, hashHere: boolean, onBytes?: (n: number) => void) {
  const hash = hashHere ? createHash('sha256') : null;
  const measured = { bytes: 0, sha256: () => hash?.digest('hex') ?? '' };
  body.on('data', (chunk: Buffer) => {
    hash?.update(chunk);
    measured.bytes += chunk.length;
    if (measured.bytes > limit.maxBytes) body.destroy(limit.exceeded());
    onBytes?.(chunk.length);
  });
  return measured;
}

/**
 * The most bytes a body may bring (its Content-Length, else media.max_file_mib), the error
 * past it while streaming, and the error of a Content-Length beyond media.max_file_mib.
 */
interface BodyLimit {
  maxBytes: number;
  exceeded(): MediaError;
  announced(length: number): MediaError;
}

function bodyLimit(url: string, expected: number | undefined, options: DownloadOptions): BodyLimit {
  const ceiling = options.maxFileBytes ?? defaultMaxFileBytes;
  const maxBytes = Math.min(expected ?? ceiling, ceiling);
  const context = { ...options.context, url: redact(url) };
  const what =
    expected !== undefined && expected <= ceiling
      ? `its Content-Length (${expected} bytes)`
      : `media.max_file_mib (${ceiling / MiB} MiB)`;
  return {
    maxBytes,
    exceeded: () =>
      new MediaError(`GET ${redact(url)} sent more than ${what}; stopped reading it`, { context }),
    announced: (length) =>
      new MediaError(
        `GET ${redact(url)} announced ${length} bytes (Content-Length), more than media.max_file_mib (${ceiling / MiB} MiB); not downloaded`,
        { context },
      ),
  };
}

/** Classifies a non-2xx answer: refresh, retry, or give up. */
function statusError(response: GetResponse, url: string, context: ErrorContext): Error {
  response.abort();
  const status = response.status;
  const where = `GET ${redact(url)} answered ${status}`;
  if (status === 403) return new LinkRefusedError(where);
  if (isRetryableStatus(status)) {
    return new TryAgain('status', String(status), where, {
      status,
      retryAfter: singleHeader(response.headers['retry-after']) ?? undefined,
    });
  }
  const code = status === 404 ? 'E_NOT_FOUND' : status === 400 ? 'E_BAD_REQUEST' : 'E_HTTP';
  return new HttpError(code, where, { context: { ...context, url: redact(url), status } });
}

/**
 * A body received and its size. Without the hashing thread its SHA-256 is computed here, and
 * asked for once the size is known to be right.
 */
interface Received {
  body: MediaBody;
  bytes: number;
  sha256(): string;
}

/**
 * Streams the body to `dest`, counting each chunk on the way and hashing it (or, with the
 * hashing thread, hashing the complete file there). A failure of the file (disk full, no
 * permission) is told apart from one of the network by which stream failed first: the
 * pipeline passes the first error on to the other stream.
 */
async function receiveToFile(
  body: IncomingMessage,
  dest: string,
  limit: BodyLimit,
  /** False when the hashing thread will read the finished file instead. */
  hashHere: boolean,
  onBytes?: (n: number) => void,
): Promise<Received> {
  const file = createWriteStream(dest);
  let failedFirst: 'file' | 'body' | null = null;
  file.once('error', () => {
    failedFirst ??= 'file';
  });
  body.once('error', () => {
    failedFirst ??= 'body';
  });
  // The pipe attaches first; both listeners see every chunk (flowing starts on next tick).
  const written = pipeline(body, file);
  const measured = measure(body, limit, hashHere, onBytes);
  try {
    await written;
  } catch (error) {
    // The file may still be opening: once it is closed, the caller's removal cannot be outrun by it.
    if (!file.closed) await once(file, 'close');
    if (error instanceof MediaError || failedFirst !== 'file') throw error;
    // A write's error names no file: this one is where a disk that filled up is.
    if (error instanceof Error && !(error as NodeJS.ErrnoException).path)
      Object.assign(error, { path: dest });
    const reason = error instanceof Error ? error.message : String(error);
    throw new MediaError(`could not write the temporary file: ${reason}`, { cause: error });
  }
  return { body: { kind: 'file', path: dest }, bytes: measured.bytes, sha256: measured.sha256 };
}

/**
 * Copies the body into `data`, a buffer of the announced length from the memory budget (no
 * chunk list, no concat), to be hashed whole once it is complete.
 */
async function receiveToMemory(
  body: IncomingMessage,
  data: Buffer,
  onBytes?: (n: number) => void,
): Promise<Received> {
  const length = data.length;
  let bytes = 0;
  body.on('data', (chunk: Buffer) => {
    // fill, not copy: the budget's memory is shared, and V8 copies into shared memory at an
    // odd offset a byte at a time; fill is one native memcpy.
    if (chunk.length > 0 && bytes + chunk.length <= length) data.fill(chunk, bytes, bytes + chunk.length);
    bytes += chunk.length;
    onBytes?.(chunk.length);
  });
  await finished(body, { writable: false });
  const sha256 = () => createHash('sha256').update(data).digest('hex');
  return { body: { kind: 'memory', data }, bytes, sha256 };
}

/**
 * The received body with its SHA-256: on the hashing thread when there is one (which gives
 * the CRC-32 of the zip entry too, so the writer need not compute it), else here.
 */
async function digested(
  received: Received,
  hashing: HashingThread | undefined,
): Promise<{ body: MediaBody; sha256: string }> {
  if (!hashing) return { body: received.body, sha256: received.sha256() };
  const { body } = received;
  const digest =
    body.kind === 'memory' ? await hashing.digestBody(body.data) : await hashing.digestFile(body.path);
  return { body: { ...body, crc32: digest.crc32 }, sha256: digest.sha256 };
}

/**
 * One attempt: stream the body to memory (when the budget takes its Content-Length) or to
 * `dest`, hashing and counting; checks Content-Length.
 */
async function attempt(url: string, options: DownloadOptions): Promise<Omit<DownloadedFile, 'link'>> {
  const context = options.context ?? {};
  let response: GetResponse | null = null;
  try {
    response = await httpGet(url, {
      timeoutMs: options.timeoutMs,
      deadlineMs: options.deadlineMs ?? defaultDeadlineMs,
      // Nothing of the API client's reaches a media host; redirects carry no credentials.
      headers: mediaHeaders,
      followRedirect: () => true,
    });
    if (response.status < 200 || response.status > 299) throw statusError(response, url, context);
    const lengthHeader = singleHeader(response.headers['content-length']);
    const expected = lengthHeader === null ? undefined : Number(lengthHeader);
    const contentType = singleHeader(response.headers['content-type']);
    const known = expected !== undefined && Number.isFinite(expected);
    const limit = bodyLimit(url, known ? expected : undefined, options);
    // A file announced larger than the ceiling is refused before a byte of it is read.
    if (known && expected > limit.maxBytes) throw limit.announced(expected);
    const memory = known ? (options.memory?.take(expected) ?? null) : null;
    try {
      const received = memory
        ? await receiveToMemory(response.body, memory, options.onBytes)
        : await receiveToFile(response.body, options.dest, limit, !options.hashing, options.onBytes);
      if (known && received.bytes !== expected) {
        throw new TryAgain(
          'body',
          'short_body',
          `GET ${redact(url)} sent ${received.bytes} of ${expected} bytes`,
        );
      }
      return { ...(await digested(received, options.hashing)), bytes: received.bytes, contentType };
    } catch (error) {
      // Nothing of a failed attempt is kept: a later attempt may go to memory instead. The
      // body is stopped first, so that no late chunk lands in a buffer handed out again.
      response.abort();
      if (memory) options.memory?.give(memory);
      else await rm(options.dest, { force: true });
      throw error;
    }
  } catch (error) {
    response?.abort();
    throw classify(error, url);
  }
}

/** A header's value when it was sent once; null when absent or repeated. */
function singleHeader(value: string | string[] | undefined): string | null {
  return typeof value === 'string' ? value : null;
}

/** Our own errors pass through; anything from the connection or the socket is worth another attempt. */
function classify(error: unknown, url: string): Error {
  if (
    error instanceof LinkRefusedError ||
    error instanceof TryAgain ||
    error instanceof HttpError ||
    error instanceof MediaError
  ) {
    return error;
  }
  const message = redact(error instanceof Error ? error.message : String(error));
  return new TryAgain('network', networkReason(error), `GET ${redact(url)} failed: ${message}`, {
    cause: error,
  });
}

/** The final error of a file whose attempts all failed, with study, response and the URL without its query. */
function giveUp(
  failure: TryAgain,
  url: string,
  attempts: number,
  options: DownloadOptions,
): StudyExportError {
  const context = { ...options.context, url: redact(url) };
  const message = `${failure.message} (gave up after ${attempts} attempts)`;
  switch (failure.kind) {
    case 'status':
      return new HttpError('E_RETRIES_EXHAUSTED', message, {
        context: { ...context, status: failure.status },
      });
    case 'body':
      return new MediaError(message, { context });
    case 'network':
      return new NetworkError(message, { context, cause: failure.cause });
  }
}

/**
 * Downloads `options.link` into memory or to `options.dest`, renewing the link when it is
 * old or refused (403) and retrying transient failures by the shared policy. Each failed
 * attempt removes its partial file, so `dest` exists only when the body is that file.
 */
export async function downloadMedia(options: DownloadOptions): Promise<DownloadedFile> {
  const now = options.now ?? Date.now;
  const maxAge = options.maxLinkAgeMs ?? defaultMaxLinkAgeMs;
  const maxRefreshes = options.maxRefreshes ?? defaultMaxRefreshes;
  let link = options.link;
  let refreshes = 0;
  const renew = async () => {
    refreshes++;
    link = await options.refresh(link);
  };
  const hooks = {
    giveUp: (failure: TryAgain, attempts: number) => giveUp(failure, link.url, attempts, options),
    counts: options.counts ?? new RetryCounts(),
  };
  return withRetries(options.policy, hooks, async () => {
    for (;;) {
      if (now() - link.issuedAt >= maxAge && refreshes < maxRefreshes) await renew();
      try {
        return { ...(await attempt(link.url, options)), link };
      } catch (error) {
        if (!(error instanceof LinkRefusedError)) throw error;
        if (refreshes >= maxRefreshes) {
          throw new MediaError(`${error.message} after ${refreshes} refreshed links`, {
            context: { ...options.context, url: redact(link.url), status: 403 },
          });
        }
        await renew();
      }
    }
  });
}
