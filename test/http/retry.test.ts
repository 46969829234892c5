/** The shared retry policy and loop: Retry-After, backoff, what is retried, how it is counted. */
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../src/errors.ts';
import {
  backoffDelay,
  parseRetryAfter,
  RetryCounts,
  retryDelay,
  retryPolicy,
  TryAgain,
  withRetries,
} from '../../src/http/retry.ts';

describe('Retry-After', () => {
  it('reads delta-seconds and HTTP dates', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter('0.5')).toBe(500);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });

  it('is capped, and backoff is used without it', () => {
    const policy = { backoff: { baseMs: 100, maxMs: 1_000 }, maxRetryAfterMs: 60_000 };
    expect(retryDelay(0, 3_600_000, policy)).toEqual({ delayMs: 60_000, capped: true });
    expect(retryDelay(0, 2_000, policy)).toEqual({ delayMs: 2_000, capped: false });
    const fallback = retryDelay(2, undefined, policy);
    expect(fallback.capped).toBe(false);
    expect(fallback.delayMs).toBeLessThan(400);
  });

  it('backoff grows exponentially up to the ceiling, with full jitter', () => {
    const backoff = { baseMs: 100, maxMs: 1_000 };
    expect(backoffDelay(0, backoff, () => 0.999)).toBe(99);
    expect(backoffDelay(3, backoff, () => 0.999)).toBe(799);
    expect(backoffDelay(10, backoff, () => 0.999)).toBe(999);
    expect(backoffDelay(10, backoff, () => 0)).toBe(0);
  });

  it('is parsed once, when the failure is made', () => {
    const failure = new TryAgain('status', '429', 'HTTP 429', { status: 429, retryAfter: '2' });
    expect(failure.retryAfterMs).toBe(2_000);
    expect(
      new TryAgain('status', '503', 'HTTP 503', { retryAfter: ['1', '2'] }).retryAfterMs,
    ).toBeUndefined();
  });
});

describe('withRetries', () => {
  const policy = retryPolicy({ retries: 2, maxRetryAfterMs: 5, backoff: { baseMs: 1, maxMs: 2 } });
  const giveUp = (failure: TryAgain, attempts: number) =>
    new HttpError('E_RETRIES_EXHAUSTED', `${failure.reason} after ${attempts}`);

  it('retries TryAgain, counts each retry by reason and capped Retry-Afters, then succeeds', async () => {
    const counts = new RetryCounts();
    const seen: number[] = [];
    const result = await withRetries(policy, { giveUp, counts }, async (attempt) => {
      seen.push(attempt);
      if (attempt === 1) throw new TryAgain('status', '429', 'slow down', { retryAfter: '3600' });
      if (attempt === 2) throw new TryAgain('network', 'ECONNRESET', 'reset');
      return 'ok';
    });
    expect(result).toBe('ok');
    expect(seen).toEqual([1, 2, 3]);
    expect(counts.snapshot()).toEqual({ retries: { '429': 1, ECONNRESET: 1 }, retry_after_capped: 1 });
  });

  it("gives up with the caller's error once the retries run out", async () => {
    const counts = new RetryCounts();
    const failure = withRetries(policy, { giveUp, counts }, async () => {
      throw new TryAgain('status', '503', 'HTTP 503');
    });
    await expect(failure).rejects.toThrow('503 after 3');
    expect(counts.snapshot().retries).toEqual({ '503': 2 });
  });

  it('does not retry any other error', async () => {
    let attempts = 0;
    const failure = withRetries(policy, { giveUp, counts: new RetryCounts() }, async () => {
      attempts += 1;
      throw new HttpError('E_NOT_FOUND', 'gone');
    });
    await expect(failure).rejects.toThrow('gone');
    expect(attempts).toBe(1);
  });
});
