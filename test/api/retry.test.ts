import pLimit from 'p-limit';
import { describe, expect, it } from 'vitest';
import { AdaptiveConcurrency } from '../../src/api/adaptive.ts';
import { ApiCounters } from '../../src/api/counters.ts';
import { backoffDelay, parseRetryAfter, retryDelay } from '../../src/api/retry.ts';

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
    const backoff = { baseMs: 100, maxMs: 1_000 };
    expect(retryDelay(0, 3_600_000, 60_000, backoff)).toEqual({ delayMs: 60_000, capped: true });
    expect(retryDelay(0, 2_000, 60_000, backoff)).toEqual({ delayMs: 2_000, capped: false });
    const fallback = retryDelay(2, undefined, 60_000, backoff);
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
});

describe('adaptive concurrency', () => {
  it('halves on sustained 429s and grows back by one after a run of successes', () => {
    const limit = pLimit(8);
    const counters = new ApiCounters(8);
    const adaptive = new AdaptiveConcurrency(limit, 8, counters, {
      threshold: 3,
      windowMs: 1_000,
      recoverAfter: 5,
    });
    adaptive.onRateLimited(0);
    adaptive.onRateLimited(10);
    expect(limit.concurrency).toBe(8);
    adaptive.onRateLimited(20);
    expect(limit.concurrency).toBe(4);
    // Spread-out 429s are not sustained.
    adaptive.onRateLimited(5_000);
    adaptive.onRateLimited(7_000);
    adaptive.onRateLimited(9_000);
    expect(limit.concurrency).toBe(4);
    for (let i = 0; i < 5; i++) adaptive.onSuccess();
    expect(limit.concurrency).toBe(5);
    for (let i = 0; i < 50; i++) adaptive.onSuccess();
    expect(limit.concurrency).toBe(8);
    const { concurrency } = counters.snapshot();
    expect(concurrency.current).toBe(8);
    expect(concurrency.changes.map((c) => [c.from, c.to, c.reason])).toEqual([
      [8, 4, 'rate_limited'],
      [4, 5, 'recovered'],
      [5, 6, 'recovered'],
      [6, 7, 'recovered'],
      [7, 8, 'recovered'],
    ]);
  });

  it('never goes below one', () => {
    const limit = pLimit(1);
    const adaptive = new AdaptiveConcurrency(limit, 1, new ApiCounters(1), { threshold: 1 });
    adaptive.onRateLimited();
    expect(limit.concurrency).toBe(1);
  });
});
