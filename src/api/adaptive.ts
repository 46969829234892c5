/**
 * Adaptive concurrency for the shared API limit (additive increase, multiplicative decrease).
 *
 * A single 429 is retried like any other; only sustained ones (several inside a short window)
 * mean the service wants fewer requests in flight, so the limit is halved. After a run of
 * successes it grows back by one, never above what the pipeline configured.
 */
import type { LimitFunction } from 'p-limit';
import type { ApiCounters } from './counters.ts';

export interface AdaptiveOptions {
  /** 429s within `windowMs` that count as sustained. */
  threshold?: number;
  windowMs?: number;
  /** Consecutive successes before the limit grows by one. */
  recoverAfter?: number;
}

export class AdaptiveConcurrency {
  private readonly threshold: number;
  private readonly windowMs: number;
  private readonly recoverAfter: number;
  private recent429s: number[] = [];
  private successes = 0;

  constructor(
    private readonly limit: LimitFunction,
    private readonly configured: number,
    private readonly counters: ApiCounters,
    options: AdaptiveOptions = {},
  ) {
    this.threshold = options.threshold ?? 3;
    this.windowMs = options.windowMs ?? 5_000;
    this.recoverAfter = options.recoverAfter ?? 20;
  }

  onRateLimited(now = Date.now()): void {
    this.successes = 0;
    this.recent429s = this.recent429s.filter((at) => now - at < this.windowMs);
    this.recent429s.push(now);
    if (this.recent429s.length < this.threshold) return;
    this.recent429s = [];
    const from = this.limit.concurrency;
    const to = Math.max(1, Math.floor(from / 2));
    if (to !== from) this.set(from, to, 'rate_limited');
  }

  onSuccess(): void {
    this.successes += 1;
    if (this.successes < this.recoverAfter) return;
    this.successes = 0;
    const from = this.limit.concurrency;
    if (from < this.configured) this.set(from, from + 1, 'recovered');
  }

  private set(from: number, to: number, reason: 'rate_limited' | 'recovered'): void {
    this.limit.concurrency = to;
    this.counters.recordConcurrencyChange(from, to, reason);
  }
}
