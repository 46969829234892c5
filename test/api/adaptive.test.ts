import pLimit from 'p-limit';
import { describe, expect, it } from 'vitest';
import { AdaptiveConcurrency } from '../../src/api/adaptive.ts';
import { ApiCounters } from '../../src/api/counters.ts';

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
