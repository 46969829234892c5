/**
 * Progress as JSON lines (--log-format json), sampled like the plain lines: a stage's start,
 * every few seconds for a stage that moved, and its end. Warnings, retries and finished
 * studies are written as they happen. Every line passes the secret mask on its way out.
 */
import type { SchemaChange } from '../drift/schema.ts';
import type { StudyOutcome } from '../output/manifest.ts';
import type { RetryEvent } from '../pipeline/progress.ts';
import type { Warning } from '../records.ts';
import { redact } from '../redact.ts';
import { jsonEvent } from './json-event.ts';
import { LineReporter } from './line-reporter.ts';
import type { StageProgress } from './reporter-base.ts';

export class JsonReporter extends LineReporter {
  protected override startText(progress: StageProgress): string {
    return jsonEvent('stage_start', { stage: progress.stage, total: progress.total ?? null });
  }

  protected override progressText(progress: StageProgress): string {
    const now = this.now();
    const eta = progress.etaSeconds(now);
    return jsonEvent('progress', {
      stage: progress.stage,
      done: progress.done,
      total: progress.total ?? null,
      ...(progress.stage === 'media' ? { bytes: progress.bytes } : {}),
      per_second: Math.round(progress.rate(now) * 10) / 10,
      eta_s: eta === undefined || progress.isComplete() ? null : Math.round(eta),
      complete: progress.isComplete(),
    });
  }

  /** The start line is for people; the events that follow say the same. */
  override note(): void {}

  /** Every warning is its own event: a log collector counts and groups them itself. */
  override warn(warning: Warning): void {
    this.print(jsonEvent('warning', warning));
  }

  override retry(event: RetryEvent): void {
    const { delayMs, retryAfterCapped, ...rest } = event;
    this.print(jsonEvent('retry', { ...rest, delay_ms: delayMs, retry_after_capped: retryAfterCapped }));
  }

  override studyDone(outcome: StudyOutcome): void {
    this.print(jsonEvent('study_done', outcome));
  }

  /** One event per change of a study's schema, as the manifest's schema_changes holds it. */
  schemaChange(change: SchemaChange): void {
    this.print(jsonEvent('schema_change', change));
  }

  protected override blankLine(): void {}

  protected override print(line: string): void {
    this.options.stream.write(`${redact(line)}\n`);
  }
}
