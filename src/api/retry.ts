/** Retry timing: exponential backoff with full jitter, and Retry-After with a cap. */

export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
}

/** Full jitter: a uniform delay in [0, min(max, base * 2^attempt)) so retrying clients spread out. */
export function backoffDelay(attempt: number, options: BackoffOptions, random = Math.random): number {
  const ceiling = Math.min(options.maxMs, options.baseMs * 2 ** attempt);
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

/** The wait for one retry: the server's Retry-After (capped) when given, otherwise backoff. */
export function retryDelay(
  attempt: number,
  retryAfterMs: number | undefined,
  maxRetryAfterMs: number,
  backoff: BackoffOptions,
): { delayMs: number; capped: boolean } {
  if (retryAfterMs === undefined) return { delayMs: backoffDelay(attempt, backoff), capped: false };
  if (retryAfterMs > maxRetryAfterMs) return { delayMs: maxRetryAfterMs, capped: true };
  return { delayMs: retryAfterMs, capped: false };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
