/** What every progress reporter of the command line shares: stage counters and message text. */
import type { StudyOutcome } from '../load/manifest.ts';
import type { ProgressReporter, RetryEvent, Stage } from '../pipeline/progress.ts';
import type { Warning } from '../records.ts';
import { formatBytes, formatCount, formatDuration, formatRate } from './format.ts';

export interface ReporterOptions {
  /** The stream is an interactive terminal. */
  tty: boolean;
  /** CI is set: never draw bars, even on a pseudo-terminal. */
  ci: boolean;
  stream: NodeJS.WriteStream;
  /** How often plain lines are written (default 5 s). */
  intervalMs?: number;
  /** Clock, for tests. */
  now?: () => number;
}

export const stageOrder: Stage[] = ['studies', 'pages', 'details', 'media'];

/** Counters of one stage; rates and ETA are derived from them. */
export class StageProgress {
  total: number | undefined;
  done = 0;
  bytes = 0;
  finished = false;
  constructor(
    readonly stage: Stage,
    readonly startedAt: number,
    total: number | undefined,
  ) {
    this.total = total;
  }

  /** Items (or, for media, bytes) per second since the stage started. */
  rate(now: number): number {
    const seconds = Math.max((now - this.startedAt) / 1000, 0.001);
    return (this.stage === 'media' ? this.bytes : this.done) / seconds;
  }

  etaSeconds(now: number): number | undefined {
    if (this.total === undefined || this.done === 0) return undefined;
    const perSecond = this.done / Math.max((now - this.startedAt) / 1000, 0.001);
    return Math.max(this.total - this.done, 0) / perSecond;
  }

  isComplete(): boolean {
    return this.total !== undefined && this.done >= this.total;
  }

  /** "details 1200/5000 (24%) 310/s eta 12s"; media adds bytes and a byte rate. */
  describe(now: number): string {
    const parts = [this.stage, this.countText()];
    if (this.stage === 'media')
      parts.push('files', formatBytes(this.bytes), `${formatBytes(this.rate(now))}/s`);
    else parts.push(`${formatRate(this.rate(now))}/s`);
    const eta = this.etaSeconds(now);
    if (eta !== undefined && !this.isComplete()) parts.push(`eta ${formatDuration(eta * 1000)}`);
    return parts.join(' ');
  }

  private countText(): string {
    if (this.total === undefined) return formatCount(this.done);
    const percent = this.total === 0 ? 100 : Math.floor((100 * this.done) / this.total);
    return `${formatCount(this.done)}/${formatCount(this.total)} (${percent}%)`;
  }
}

/** Shared bookkeeping: stage counters and the messages both reporters print. */
export abstract class BaseReporter implements ProgressReporter {
  protected readonly stages = new Map<Stage, StageProgress>();
  protected readonly now: () => number;

  constructor(protected readonly options: ReporterOptions) {
    this.now = options.now ?? Date.now;
  }

  start(stage: Stage, total?: number): void {
    const progress = new StageProgress(stage, this.now(), total);
    this.stages.set(stage, progress);
    this.onStart(progress);
  }

  tick(stage: Stage, count = 1, bytes = 0): void {
    const progress = this.stages.get(stage) ?? this.implicitStart(stage);
    progress.done += count;
    progress.bytes += bytes;
    this.onChange(progress);
  }

  warn(warning: Warning): void {
    this.print(formatWarning(warning));
  }

  /** Retries are counted in the manifest; a person watching needs no line for each. */
  retry(_event: RetryEvent): void {}

  /** A failed study is already a warning; the summary counts the rest. */
  studyDone(_outcome: StudyOutcome): void {}

  abstract stop(): void;
  protected abstract onStart(progress: StageProgress): void;
  protected abstract onChange(progress: StageProgress): void;
  protected abstract print(line: string): void;

  // A tick before start() still counts: the pipeline owns the order, not the reporter.
  private implicitStart(stage: Stage): StageProgress {
    this.start(stage);
    return this.stages.get(stage)!;
  }
}

export function formatWarning(warning: Warning): string {
  const study = warning.link_id ?? warning.study_id;
  const suffix = study && !warning.message.includes(study) ? ` (study ${study})` : '';
  return `warning: ${warning.message}${suffix}`;
}
