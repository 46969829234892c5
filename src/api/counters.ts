/**
 * What the client did, for the manifest: every request by operation and outcome, every
 * retry by reason, bytes received, time spent, and each change of the adaptive concurrency.
 */
import { RetryCounts, type RetryCountsSnapshot } from '../http/retry.ts';
import type { Operation } from './resources.ts';

export interface ConcurrencyChange {
  at: string;
  from: number;
  to: number;
  reason: 'rate_limited' | 'recovered';
}

export interface CountersSnapshot extends RetryCountsSnapshot {
  /** Attempts by operation and outcome: an HTTP status ("200", "503") or a network error code ("ECONNRESET"). */
  requests: Record<string, Record<string, number>>;
  /** Body bytes received, by operation. */
  bytes: Record<string, number>;
  /** Wall time of attempts (excluding queueing and backoff), by operation. */
  durations: Record<string, { total_ms: number; count: number }>;
  concurrency: { configured: number; current: number; changes: ConcurrencyChange[] };
}

export class ApiCounters {
  private readonly requests: Record<string, Record<string, number>> = {};
  /** Counted by the retry loop (src/http/retry.ts), as the media stage's are. */
  readonly retryCounts = new RetryCounts();
  private readonly bytes: Record<string, number> = {};
  private readonly durations: Record<string, { total_ms: number; count: number }> = {};
  private readonly changes: ConcurrencyChange[] = [];
  private currentConcurrency: number;

  constructor(private readonly configuredConcurrency: number) {
    this.currentConcurrency = configuredConcurrency;
  }

  /** One attempt finished with `outcome` (status or error code) after `ms`, carrying `bytes` of body. */
  recordAttempt(operation: Operation, outcome: string | number, ms: number, bytes: number): void {
    const byOutcome = this.requests[operation] ?? {};
    this.requests[operation] = byOutcome;
    const key = String(outcome);
    byOutcome[key] = (byOutcome[key] ?? 0) + 1;
    this.bytes[operation] = (this.bytes[operation] ?? 0) + bytes;
    const duration = this.durations[operation] ?? { total_ms: 0, count: 0 };
    this.durations[operation] = duration;
    duration.total_ms += ms;
    duration.count += 1;
  }

  recordConcurrencyChange(from: number, to: number, reason: ConcurrencyChange['reason']): void {
    this.currentConcurrency = to;
    this.changes.push({ at: new Date().toISOString(), from, to, reason });
  }

  /** A plain-JSON copy, safe to put in the manifest and to keep after further requests. */
  snapshot(): CountersSnapshot {
    return structuredClone({
      requests: this.requests,
      ...this.retryCounts.snapshot(),
      bytes: this.bytes,
      durations: this.durations,
      concurrency: {
        configured: this.configuredConcurrency,
        current: this.currentConcurrency,
        changes: this.changes,
      },
    });
  }
}
