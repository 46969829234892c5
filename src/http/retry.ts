/**
 * The retry policy of every HTTP request the tool makes (API calls and media downloads),
 * written once as data, and the one loop that applies it.
 *
 * An attempt either returns, throws `TryAgain` (a failure worth another attempt: network
 * errors, 408/429/5xx, short or unreadable bodies) or throws anything else, which is final.
 * Once the attempts run out, the caller's `giveUp` turns the last `TryAgain` into its typed
 * error. Waits use the server's Retry-After (parsed once, here, and capped) or exponential
 * backoff with full jitter; every retry is counted by reason in the same shape for API and
 * media (`RetryCounts`).
 */
import type { StudyExportError } from '../errors.ts';

export interface RetryPolicy {
  /** Attempts after the first. */
  retries: number;
  /** Backoff without Retry-After: a uniform delay in [0, min(maxMs, baseMs * 2^retry)). */
  backoff: { baseMs: number; maxMs: number };
  /** Longest Retry-After honoured; a longer one is waited only this long and counted as capped. */
  maxRetryAfterMs: number;
}

export const defaultBackoff: RetryPolicy['backoff'] = { baseMs: 250, maxMs: 10_000 };
export const defaultMaxRetryAfterMs = 60_000;

/** The policy for `retries`, with the defaults for what is not given. */
export function retryPolicy(settings: {
  retries: number;
  maxRetryAfterMs?: number | undefined;
  backoff?: Partial<RetryPolicy['backoff']> | undefined;
}): RetryPolicy {
  return {
    retries: settings.retries,
    backoff: { ...defaultBackoff, ...settings.backoff },
    maxRetryAfterMs: settings.maxRetryAfterMs ?? defaultMaxRetryAfterMs,
  };
}

/** Statuses worth another attempt: request timeout, rate limit, server errors. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** What went wrong in a retryable attempt, for the caller's final error once retries run out. */
export type TryAgainKind = 'status' | 'network' | 'body';

/** A failure worth another attempt. `reason` is its counter key: "503", "ECONNRESET", "truncated". */
export class TryAgain extends Error {
  readonly status: number | undefined;
  /** What the server's Retry-After asked for, uncapped; undefined without one. */
  readonly retryAfterMs: number | undefined;

  constructor(
    readonly kind: TryAgainKind,
    readonly reason: string,
    message: string,
    options: { status?: number; retryAfter?: string | string[] | undefined; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = options.status;
    const header = options.retryAfter;
    this.retryAfterMs = parseRetryAfter(typeof header === 'string' ? header : undefined);
  }
}

/** The network error code of a failed request ("ECONNRESET"), "ERR_NETWORK" when it has none. */
export function networkReason(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'ERR_NETWORK';
}

/** Full jitter: a uniform delay in [0, min(max, base * 2^retry)) so retrying clients spread out. */
export function backoffDelay(
  retry: number,
  backoff: RetryPolicy['backoff'],
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(backoff.maxMs, backoff.baseMs * 2 ** retry);
  return Math.floor(random() * ceiling);
}

/**
 * Milliseconds a Retry-After header asks for: delta-seconds or an HTTP date.
 * undefined when absent or unreadable (the caller falls back to backoff).
 */
export function parseRetryAfter(header: string | undefined, now = Date.now()): number | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** The wait before retry number `retry` (0-based): Retry-After, capped, when given, else backoff. */
export function retryDelay(
  retry: number,
  retryAfterMs: number | undefined,
  policy: Pick<RetryPolicy, 'backoff' | 'maxRetryAfterMs'>,
): { delayMs: number; capped: boolean } {
  if (retryAfterMs === undefined) return { delayMs: backoffDelay(retry, policy.backoff), capped: false };
  if (retryAfterMs > policy.maxRetryAfterMs) return { delayMs: policy.maxRetryAfterMs, capped: true };
  return { delayMs: retryAfterMs, capped: false };
}

/** Retries by reason and capped Retry-Afters: the manifest's shape for both API and media. */
export interface RetryCountsSnapshot {
  /** Retries by reason: "429", "503", "ECONNRESET", "invalid_json", "truncated", ... */
  retries: Record<string, number>;
  /** Retry-After values longer than the cap, which were waited for only up to the cap. */
  retry_after_capped: number;
}

export class RetryCounts {
  private readonly retries: Record<string, number> = {};
  private capped = 0;

  record(reason: string, capped: boolean): void {
    this.retries[reason] = (this.retries[reason] ?? 0) + 1;
    if (capped) this.capped += 1;
  }

  snapshot(): RetryCountsSnapshot {
    return { retries: { ...this.retries }, retry_after_capped: this.capped };
  }
}

/** One retry about to happen. */
export interface RetryEvent {
  failure: TryAgain;
  /** 1 for the first retry. */
  retry: number;
  delayMs: number;
  /** The server asked for a longer Retry-After than the policy's cap; only the cap is waited. */
  capped: boolean;
}

export interface RetryHooks {
  /** Builds the final error from the last failure once the attempts run out. */
  giveUp: (failure: TryAgain, attempts: number) => StudyExportError;
  counts: RetryCounts;
  /** Called before each wait (after counting). */
  onRetry?: (event: RetryEvent) => void;
  /** Fewer retries than the policy allows for this failure (the API's "service is down" mode). */
  retries?: (failure: TryAgain) => number;
}

/** Runs `attempt` until it returns, throws a final error, or its retries run out. */
export async function withRetries<T>(
  policy: RetryPolicy,
  hooks: RetryHooks,
  attempt: (attemptNumber: number) => Promise<T>,
): Promise<T> {
  for (let retry = 0; ; retry++) {
    try {
      return await attempt(retry + 1);
    } catch (error) {
      if (!(error instanceof TryAgain)) throw error;
      if (retry >= (hooks.retries?.(error) ?? policy.retries)) throw hooks.giveUp(error, retry + 1);
      const { delayMs, capped } = retryDelay(retry, error.retryAfterMs, policy);
      hooks.counts.record(error.reason, capped);
      hooks.onRetry?.({ failure: error, retry: retry + 1, delayMs, capped });
      await sleep(delayMs);
    }
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
