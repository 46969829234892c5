/**
 * The client for the service's three operations (spec section 4), on got 14.
 *
 * - Every attempt of every operation runs inside ONE p-limit (source.concurrency), shared by
 *   all studies; backoff waits happen outside it, so a sleeping retry does not hold a slot.
 * - The key goes only to base_url's host: requests are built from base_url, and a redirect to
 *   another host is neither followed nor given the key.
 * - Retries (own loop, got's are off): network errors, 408, 429, 5xx, non-JSON and truncated
 *   bodies; backoff with full jitter, Retry-After honoured up to a cap. 400/401/403/404 are final.
 * - Bodies are read as bytes and parsed here, so truncation and non-JSON are seen and retried.
 */
import http from 'node:http';
import https from 'node:https';
import got, { type Got } from 'got';
import pLimit, { type LimitFunction } from 'p-limit';
import { HttpError, redactUrl } from '../errors.ts';
import { AdaptiveConcurrency, type AdaptiveOptions } from './adaptive.ts';
import { ApiCounters } from './counters.ts';
import {
  answerOutcome,
  type ClientIdentity,
  networkOutcome,
  type Outcome,
  type RequestSpec,
} from './outcome.ts';
import type { Operation } from './resources.ts';
import { type BackoffOptions, parseRetryAfter, retryDelay, sleep } from './retry.ts';

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
  /** Per-phase timeouts (connect, idle socket, time to first byte, ...); no overall request timeout. */
  timeoutMs: number;
  /** Retries after the first attempt. */
  retries: number;
  /** Longest Retry-After honoured; longer ones are capped to this (and counted). Default 60 s. */
  maxRetryAfterMs?: number;
  /** Backoff when no Retry-After is given. Defaults: 250 ms base, 10 s ceiling. */
  backoff?: Partial<BackoffOptions>;
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
  payload: unknown;
  /** The request URL without its query string. */
  url: string;
  query?: Record<string, string>;
  status: number;
  bytes: number;
  receivedAt: string;
}

export interface ApiClient {
  readonly baseUrl: string;
  listStudies(): Promise<Fetched>;
  listResponses(linkId: string, query: ListResponsesQuery): Promise<Fetched>;
  getResponse(linkId: string, responseId: string): Promise<Fetched>;
  readonly counters: ApiCounters;
  /** The shared limit every API request runs in. */
  readonly limit: LimitFunction;
  /** Closes kept-alive connections. */
  close(): void;
}

/** A path segment safe in a URL: '/', '?', '#', '%', unicode all encoded. */
export function pathSegment(value: string, what: string): string {
  // WHATWG URLs collapse "." and ".." segments even when percent-encoded: they cannot be addressed.
  if (value === '.' || value === '..' || value === '') {
    throw new HttpError(
      'E_BAD_REQUEST',
      `${what} ${JSON.stringify(value)} cannot be used as a URL path segment`,
    );
  }
  return encodeURIComponent(value);
}

export function createApiClient(options: ApiClientOptions): ApiClient {
  return new GotApiClient(options);
}

class GotApiClient implements ApiClient {
  readonly baseUrl: string;
  readonly counters: ApiCounters;
  readonly limit: LimitFunction;
  private readonly base: URL;
  private readonly http: Got;
  private readonly agents: { http: http.Agent; https: https.Agent };
  private readonly adaptive: AdaptiveConcurrency;
  private readonly identity: ClientIdentity;
  private readonly backoff: BackoffOptions;
  private readonly maxRetryAfterMs: number;

  constructor(private readonly options: ApiClientOptions) {
    // A trailing slash makes relative paths resolve below any path base_url has.
    this.base = new URL(options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`);
    this.baseUrl = redactUrl(this.base);
    this.identity = { apiKey: options.apiKey, apiKeyEnv: options.apiKeyEnv };
    this.counters = new ApiCounters(options.concurrency);
    this.limit = pLimit(options.concurrency);
    this.adaptive = new AdaptiveConcurrency(this.limit, options.concurrency, this.counters, options.adaptive);
    this.backoff = { baseMs: 250, maxMs: 10_000, ...options.backoff };
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000;
    this.agents = {
      http: new http.Agent({ keepAlive: true }),
      https: new https.Agent({ keepAlive: true }),
    };
    this.http = this.createGot();
  }

  private createGot(): Got {
    const t = this.options.timeoutMs;
    const apiHost = this.base.host;
    const sameHost = (url: URL) => url.host === apiHost && url.protocol === this.base.protocol;
    return got.extend({
      headers: { 'x-api-key': this.options.apiKey, accept: 'application/json' },
      timeout: { lookup: t, connect: t, secureConnect: t, socket: t, send: t, response: t },
      retry: { limit: 0 },
      throwHttpErrors: false,
      responseType: 'buffer',
      agent: this.agents,
      // Follow only redirects that stay on the API host; others come back as 3xx and fail.
      followRedirect: (response) => {
        const location = response.headers.location;
        if (typeof location !== 'string') return false;
        try {
          return sameHost(new URL(location, response.url));
        } catch {
          return false;
        }
      },
    });
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
    const url = this.url(`api/public/responses/${pathSegment(linkId, 'study link_id')}`, params);
    return this.fetch({ operation: 'list_responses', url, query: params, study: linkId });
  }

  async getResponse(linkId: string, responseId: string): Promise<Fetched> {
    const path = `api/public/responses/${pathSegment(linkId, 'study link_id')}/${pathSegment(responseId, 'response id')}`;
    return this.fetch({
      operation: 'get_response',
      url: this.url(path),
      study: linkId,
      response: responseId,
    });
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  private url(path: string, params?: Record<string, string>): URL {
    const url = new URL(path, this.base);
    for (const [key, value] of Object.entries(params ?? {})) url.searchParams.set(key, value);
    return url;
  }

  /** The retry loop: attempts run in the shared limit, waits outside it. */
  private async fetch(spec: RequestSpec): Promise<Fetched> {
    for (let attempt = 0; ; attempt++) {
      const { outcome, status, bytes } = await this.limit(() => this.attempt(spec));
      if (outcome.kind === 'ok') {
        this.adaptive.onSuccess();
        const fetched: Fetched = {
          payload: outcome.payload,
          url: redactUrl(spec.url),
          status,
          bytes,
          receivedAt: new Date().toISOString(),
        };
        if (spec.query !== undefined) fetched.query = spec.query;
        return fetched;
      }
      if (outcome.kind === 'fail') throw outcome.error;
      if (outcome.reason === '429') this.adaptive.onRateLimited();
      if (attempt >= this.options.retries) throw outcome.fail(attempt + 1);
      await this.waitBeforeRetry(spec, outcome, attempt);
    }
  }

  private async waitBeforeRetry(
    spec: RequestSpec,
    outcome: Extract<Outcome, { kind: 'retry' }>,
    attempt: number,
  ): Promise<void> {
    const retryAfterMs = parseRetryAfter(outcome.retryAfterHeader);
    const { delayMs, capped } = retryDelay(attempt, retryAfterMs, this.maxRetryAfterMs, this.backoff);
    this.counters.recordRetry(outcome.reason);
    if (capped) this.counters.recordRetryAfterCapped();
    const info: RetryInfo = {
      operation: spec.operation,
      url: redactUrl(spec.url),
      attempt: attempt + 1,
      reason: outcome.reason,
      delayMs,
      retryAfterCapped: capped,
    };
    if (spec.study !== undefined) info.study = spec.study;
    if (spec.response !== undefined) info.response = spec.response;
    this.options.onRetry?.(info);
    await sleep(delayMs);
  }

  /** One HTTP exchange, classified; counted whatever happens. */
  private async attempt(spec: RequestSpec): Promise<{ outcome: Outcome; status: number; bytes: number }> {
    const started = performance.now();
    try {
      const response = await this.http.get(spec.url, { responseType: 'buffer' });
      const body = response.body;
      this.counters.recordAttempt(
        spec.operation,
        response.statusCode,
        performance.now() - started,
        body.length,
      );
      const outcome = answerOutcome(
        spec,
        { status: response.statusCode, headers: response.headers, body, url: response.url },
        this.identity,
      );
      return { outcome, status: response.statusCode, bytes: body.length };
    } catch (error) {
      const outcome = networkOutcome(spec, error, this.identity);
      const code = outcome.kind === 'retry' ? outcome.reason : 'error';
      this.counters.recordAttempt(spec.operation, code, performance.now() - started, 0);
      return { outcome, status: 0, bytes: 0 };
    }
  }
}
