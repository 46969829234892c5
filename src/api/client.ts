/**
 * The client for the service's three operations (spec section 4), on node:http (src/http/get.ts).
 *
 * - Every attempt of every operation runs inside ONE p-limit (source.concurrency), shared by
 *   all studies; backoff waits happen outside it, so a sleeping retry does not hold a slot.
 * - The key goes only to base_url's host: requests are built from base_url, and a redirect to
 *   another host is neither followed nor given the key.
 * - Retries: the shared policy and loop of src/http/retry.ts. outcome.ts says
 *   what is retried (network errors, 408, 429, 5xx, non-JSON and truncated bodies) and what
 *   is final (400/401/403/404).
 * - Bodies are read as bytes (decompressed, capped as they arrive) and parsed here, so
 *   truncation and non-JSON are seen and retried.
 */
import http from 'node:http';
import https from 'node:https';
import type { Readable, Transform } from 'node:stream';
import zlib from 'node:zlib';
import pLimit, { type LimitFunction } from 'p-limit';
import { HttpError } from '../errors.ts';
import { type Agents, type GetResponse, httpGet } from '../http/get.ts';
import { type RetryEvent, type RetryPolicy, retryPolicy, type TryAgain, withRetries } from '../http/retry.ts';
import { redact, registerSecret } from '../redact.ts';
import { nextTurn } from '../util/concurrency.ts';
import { AdaptiveConcurrency, type AdaptiveOptions } from './adaptive.ts';
import { ApiCounters } from './counters.ts';
import type { JsonArrayElements } from './json-array.ts';
import {
  bodyTooLarge,
  type ClientIdentity,
  giveUp,
  networkFailure,
  type RawAnswer,
  type ReadBody,
  type RequestSpec,
  readAnswer,
} from './outcome.ts';
import type { Operation, ReceivedJson } from './resources.ts';

export interface RetryInfo {
  operation: Operation;
  study?: string;
  response?: string;
  /** Redacted request URL. */
  url: string;
  /** 1 for the first retry. */
  attempt: number;
  /** HTTP status ("503") or network error code ("ECONNRESET"), "invalid_json", "truncated". */
  reason: string;
  delayMs: number;
  /** The server asked for a longer Retry-After than maxRetryAfterMs; only the cap was waited. */
  retryAfterCapped: boolean;
}

export interface ApiClientOptions {
  baseUrl: string;
  apiKey: string;
  /** Name of the environment variable the key came from, for error messages. */
  apiKeyEnv: string;
  /** API requests in flight across all studies. */
  concurrency: number;
  /** Longest wait for a connection, the first byte or the next chunk (`deadlineMs` bounds the whole). */
  timeoutMs: number;
  /** The whole request, first byte sent to last received. Default 4 × timeoutMs. */
  deadlineMs?: number;
  /** Largest body read; a longer one is cut off while it arrives. Default 64 MiB. */
  maxBodyBytes?: number;
  /** Retries after the first attempt. */
  retries: number;
  /** Longest Retry-After honoured; longer ones are capped to this (and counted). Default 60 s. */
  maxRetryAfterMs?: number;
  /** Backoff when no Retry-After is given. Defaults: 250 ms base, 10 s ceiling. */
  backoff?: Partial<RetryPolicy['backoff']>;
  adaptive?: AdaptiveOptions;
  onRetry?: (info: RetryInfo) => void;
}

export interface ListResponsesQuery {
  page: number;
  perPage: number;
  updatedSince?: string;
  includeInProgress: boolean;
}

export interface Fetched {
  /** The body parsed; undefined when `elements` holds it instead. */
  payload: unknown;
  /**
   * A listing page's elements, each parsed when taken (src/api/json-array.ts): a page is
   * never parsed whole. Absent when the body holds no well-formed array (then `payload` has it).
   */
  elements?: JsonArrayElements;
  /** The body as received, which parsed as `payload` (or holds `elements`, `payload` undefined). */
  json?: ReceivedJson;
  /** The request URL without its query string. */
  url: string;
  query?: Record<string, string>;
  status: number;
  bytes: number;
  receivedAt: string;
}

/**
 * The service's clock against this machine's, from the Date header of its answers: the
 * service's time minus this machine's when the header arrived, the least of those seen (the
 * header is cut to the second and sent before it arrives, so this errs towards "behind").
 */
export class ServiceClock {
  #skewMs: number | null = null;

  observe(dateHeader: string | string[] | undefined, localMs: number): void {
    const serviceMs = typeof dateHeader === 'string' ? Date.parse(dateHeader) : Number.NaN;
    if (Number.isNaN(serviceMs)) return;
    const skew = serviceMs - localMs;
    if (this.#skewMs === null || skew < this.#skewMs) this.#skewMs = skew;
  }

  /** Null while no answer carried a Date header. */
  get skewMs(): number | null {
    return this.#skewMs;
  }
}

export interface ApiClient {
  readonly baseUrl: string;
  /** What the service's Date headers say of its clock; absent for a recorded source. */
  readonly serviceClock?: ServiceClock;
  listStudies(): Promise<Fetched>;
  listResponses(linkId: string, query: ListResponsesQuery): Promise<Fetched>;
  getResponse(linkId: string, responseId: string): Promise<Fetched>;
  readonly counters: ApiCounters;
  /** The shared limit every API request runs in. */
  readonly limit: LimitFunction;
  /** Closes kept-alive connections. */
  close(): void;
}

/**
 * A path segment safe in a URL: '/', '?', '#', '%', unicode all encoded, and "." and ".." as
 * "%2E" and "%2E%2E", which a WHATWG URL would remove (so such a request is sent with its path
 * as written: `requestPath`).
 */
export function pathSegment(value: string, what: string): string {
  if (value === '') {
    throw new HttpError('E_BAD_REQUEST', `${what} "" cannot be used as a URL path segment`);
  }
  if (value === '.' || value === '..') return value.replaceAll('.', '%2E');
  return encodeURIComponent(value);
}

const dotSegment = /(^|\/)(%2E){1,2}(\/|$)/;

export function createApiClient(options: ApiClientOptions): ApiClient {
  return new HttpApiClient(options);
}

const MiB = 1024 * 1024;

class HttpApiClient implements ApiClient {
  readonly baseUrl: string;
  readonly counters: ApiCounters;
  readonly limit: LimitFunction;
  readonly serviceClock = new ServiceClock();
  private readonly base: URL;
  private readonly agents: Agents;
  private readonly headers: Record<string, string>;
  private readonly adaptive: AdaptiveConcurrency;
  private readonly identity: ClientIdentity;
  private readonly policy: RetryPolicy;
  /**
   * Set when a request gave up because the service did not answer, cleared by the next
   * answer: while set, network failures are not retried, so a service that went away ends
   * each remaining request after one attempt instead of a full round of backoff.
   */
  private serviceDown = false;
  private readonly deadlineMs: number;
  private readonly maxBodyBytes: number;

  constructor(private readonly options: ApiClientOptions) {
    // A trailing slash makes relative paths resolve below any path base_url has.
    this.base = new URL(options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`);
    this.baseUrl = redact(this.base);
    // Whatever a server echoes back (a header in an error body) is masked before it is shown.
    registerSecret(options.apiKey);
    this.identity = { apiKeyEnv: options.apiKeyEnv };
    this.counters = new ApiCounters(options.concurrency);
    this.limit = pLimit(options.concurrency);
    this.adaptive = new AdaptiveConcurrency(this.limit, options.concurrency, this.counters, options.adaptive);
    this.policy = retryPolicy(options);
    this.deadlineMs = options.deadlineMs ?? 4 * options.timeoutMs;
    this.maxBodyBytes = options.maxBodyBytes ?? 64 * MiB;
    this.agents = {
      http: new http.Agent({ keepAlive: true }),
      https: new https.Agent({ keepAlive: true }),
    };
    this.headers = {
      'x-api-key': options.apiKey,
      accept: 'application/json',
      'accept-encoding': 'gzip, deflate, br',
      'user-agent': 'study-export',
    };
  }

  listStudies(): Promise<Fetched> {
    return this.fetch({ operation: 'list_surveys', url: this.url('api/public/list_surveys') });
  }

  async listResponses(linkId: string, query: ListResponsesQuery): Promise<Fetched> {
    const params: Record<string, string> = {
      page: String(query.page),
      per_page: String(query.perPage),
      include_in_progress: String(query.includeInProgress),
    };
    if (query.updatedSince !== undefined) params.updated_since = query.updatedSince;
    const path = `api/public/responses/${pathSegment(linkId, 'study link_id')}`;
    const url = this.url(path, params);
    return this.fetch({
      operation: 'list_responses',
      url,
      ...this.requestPath(path, url),
      query: params,
      study: linkId,
      byElement: true,
    });
  }

  async getResponse(linkId: string, responseId: string): Promise<Fetched> {
    const path = `api/public/responses/${pathSegment(linkId, 'study link_id')}/${pathSegment(responseId, 'response id')}`;
    const url = this.url(path);
    return this.fetch({
      operation: 'get_response',
      url,
      ...this.requestPath(path, url),
      study: linkId,
      response: responseId,
    });
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  /**
   * The path to send as written, for a path with a "." or ".." segment (written %2E): the URL
   * has lost it (WHATWG URLs remove such segments), and the service addresses it only this way.
   */
  private requestPath(path: string, url: URL): { path?: string } {
    if (!dotSegment.test(path)) return {};
    return { path: `${new URL('./', this.base).pathname}${path}${url.search}` };
  }

  private url(path: string, params?: Record<string, string>): URL {
    const url = new URL(path, this.base);
    for (const [key, value] of Object.entries(params ?? {})) url.searchParams.set(key, value);
    return url;
  }

  /** The shared retry loop: attempts run in the shared limit, waits outside it. */
  private async fetch(spec: RequestSpec): Promise<Fetched> {
    const hooks = {
      giveUp: (failure: TryAgain, attempts: number) => {
        if (failure.kind === 'network') this.serviceDown = true;
        return giveUp(spec, failure, attempts);
      },
      counts: this.counters.retryCounts,
      onRetry: (event: RetryEvent) => this.onRetry(spec, event),
      retries: (failure: TryAgain) =>
        this.serviceDown && failure.kind === 'network' ? 0 : this.policy.retries,
    };
    const { payload, elements, status, bytes, body } = await withRetries(this.policy, hooks, () =>
      this.limit(() => this.attempt(spec)),
    );
    // The slot just freed started the next request, which node:http writes on the next tick:
    // let it go out before the caller's synchronous work on this answer (validation,
    // transform, encoding), or every answer would hold up the request after it.
    await nextTurn();
    this.adaptive.onSuccess();
    const fetched: Fetched = {
      payload,
      ...(elements ? { elements } : {}),
      json: { bytes: body, of: payload },
      url: redact(spec.url),
      status,
      bytes,
      receivedAt: new Date().toISOString(),
    };
    if (spec.query !== undefined) fetched.query = spec.query;
    return fetched;
  }

  private onRetry(spec: RequestSpec, event: RetryEvent): void {
    if (event.failure.reason === '429') this.adaptive.onRateLimited();
    const info: RetryInfo = {
      operation: spec.operation,
      url: redact(spec.url),
      attempt: event.retry,
      reason: event.failure.reason,
      delayMs: event.delayMs,
      retryAfterCapped: event.capped,
    };
    if (spec.study !== undefined) info.study = spec.study;
    if (spec.response !== undefined) info.response = spec.response;
    this.options.onRetry?.(info);
  }

  /** One HTTP exchange: its payload, or TryAgain / a final error; counted whatever happens. */
  private async attempt(
    spec: RequestSpec,
  ): Promise<ReadBody & { status: number; bytes: number; body: Buffer }> {
    const started = performance.now();
    let answer: RawAnswer;
    try {
      answer = await this.receive(spec.url, spec.path);
    } catch (error) {
      if (error instanceof BodyTooLarge) {
        this.counters.recordAttempt(spec.operation, 'too_large', performance.now() - started, 0);
        throw bodyTooLarge(spec, this.maxBodyBytes);
      }
      const failure = networkFailure(error, this.deadlineMs);
      this.counters.recordAttempt(spec.operation, failure.reason, performance.now() - started, 0);
      throw failure;
    }
    this.serviceDown = false;
    this.counters.recordAttempt(
      spec.operation,
      answer.status,
      performance.now() - started,
      answer.body.length,
    );
    const read = readAnswer(spec, answer, this.identity);
    return { ...read, status: answer.status, bytes: answer.body.length, body: answer.body };
  }

  /** The whole answer; the body cap is enforced as the (decompressed) bytes arrive. */
  private async receive(url: URL, path: string | undefined): Promise<RawAnswer> {
    const response = await httpGet(url, {
      ...(path === undefined ? {} : { path }),
      timeoutMs: this.options.timeoutMs,
      deadlineMs: this.deadlineMs,
      headers: this.headers,
      agents: this.agents,
      // Follow only redirects that stay on the API host; others come back as 3xx and fail.
      followRedirect: (_from, to) => to.host === this.base.host && to.protocol === this.base.protocol,
    });
    // Taken when the headers arrive, before the body: the Date header's moment, give or take.
    // Answers of the service itself only (a proxy's error page may carry another clock).
    if (response.status >= 200 && response.status < 300)
      this.serviceClock.observe(response.headers.date, Date.now());
    try {
      if (Number(response.headers['content-length']) > this.maxBodyBytes) throw new BodyTooLarge();
      const chunks: Buffer[] = [];
      let bytes = 0;
      for await (const chunk of decoded(response)) {
        bytes += (chunk as Buffer).length;
        if (bytes > this.maxBodyBytes) throw new BodyTooLarge();
        chunks.push(chunk as Buffer);
      }
      return {
        status: response.status,
        headers: response.headers,
        body: Buffer.concat(chunks, bytes),
        url: response.url.href,
      };
    } catch (error) {
      response.abort();
      throw error;
    }
  }
}

/** A body past `maxBodyBytes`: the request is stopped while it arrives. */
class BodyTooLarge extends Error {}

/** Decoders of the content-encodings the client asks for (accept-encoding). */
const decoders: Record<string, () => Transform> = {
  gzip: zlib.createGunzip,
  'x-gzip': zlib.createGunzip,
  deflate: zlib.createInflate,
  br: zlib.createBrotliDecompress,
};

/** The body as sent before any content-encoding; an unknown encoding is passed through. */
function decoded(response: GetResponse): Readable {
  const encoding = String(response.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  const decoder = decoders[encoding]?.();
  if (decoder === undefined) return response.body;
  response.body.on('error', (error) => decoder.destroy(error));
  return response.body.pipe(decoder);
}
