/**
 * What every progress reporter of the command line shares: stage counters, warnings folded
 * by kind, and message text.
 */

import type { StudyOutcome } from '../output/manifest.ts';
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

export const stageOrder: Stage[] = ['studies', 'details', 'pages', 'media'];

/** Counters of one stage; rates and ETA are derived from them. */
export class StageProgress {
  total: number | undefined;
  done = 0;
  bytes = 0;
  /** Studies begun and not yet done (the studies stage only). */
  inProgress = 0;
  /** When the stage's work ended: its rate stops there instead of falling afterwards. */
  finishedAt: number | undefined;
  constructor(
    readonly stage: Stage,
    readonly startedAt: number,
    total: number | undefined,
  ) {
    this.total = total;
  }

  get finished(): boolean {
    return this.finishedAt !== undefined;
  }

  /** Items (or, for media, bytes) per second from the stage's start to now or to its end. */
  rate(now: number): number {
    const seconds = Math.max((this.endOf(now) - this.startedAt) / 1000, 0.001);
    return (this.stage === 'media' ? this.bytes : this.done) / seconds;
  }

  /** Only details has an ETA: its total is known and its items are alike. */
  etaSeconds(now: number): number | undefined {
    if (this.stage !== 'details' || this.finished) return undefined;
    if (this.total === undefined || this.done === 0 || this.isComplete()) return undefined;
    return Math.max(this.total - this.done, 0) / this.rate(now);
  }

  isComplete(): boolean {
    return this.total !== undefined && this.done >= this.total;
  }

  /** The bar's fill, 0 to 1; undefined for a counter without a total. */
  fraction(): number | undefined {
    if (this.total === undefined) return this.finished ? 1 : undefined;
    return this.total === 0 ? 1 : Math.min(this.done / this.total, 1);
  }

  /**
   * "details 1,200/5,000 (24%) 310/s eta 12s", "studies 2/5 (40%), 3 in progress",
   * "studies 5/5 (100%), done", "pages 10", "media 672 files 1.0 MB 450.1 KB/s".
   */
  describe(now: number): string {
    const parts = [this.stage, this.countText()];
    if (this.stage === 'studies') {
      if (this.inProgress > 0 && !this.finished) parts[1] += `, ${formatCount(this.inProgress)} in progress`;
    } else if (this.stage === 'media') {
      parts.push('files', formatBytes(this.bytes), `${formatBytes(this.rate(now))}/s`);
    } else if (this.stage === 'details') {
      parts.push(`${formatRate(this.rate(now))}/s`);
    }
    const eta = this.etaSeconds(now);
    if (eta !== undefined) parts.push(`eta ${formatDuration(eta * 1000)}`);
    // The studies say the work ended (the summary gives the one elapsed time); the other
    // counters just stop there.
    if (this.stage === 'studies' && this.finished && this.isComplete()) parts[1] += ', done';
    return parts.join(' ');
  }

  private endOf(now: number): number {
    return this.finishedAt === undefined ? now : Math.min(now, this.finishedAt);
  }

  private countText(): string {
    if (this.total === undefined) return formatCount(this.done);
    const percent = this.total === 0 ? 100 : Math.floor((100 * this.done) / this.total);
    return `${formatCount(this.done)}/${formatCount(this.total)} (${percent}%)`;
  }
}

/** The warnings of one kind (code): the first, and how many there were. */
interface WarningKind {
  first: Warning;
  count: number;
}

/**
 * Shared bookkeeping: stage counters, the warnings, and the lines both reporters print.
 * Warnings are shown once the run ends, one line per kind with its count (every one of them
 * is in the manifest): a run with 18 cut cells says so in one line, not 18.
 */
export abstract class BaseReporter implements ProgressReporter {
  protected readonly stages = new Map<Stage, StageProgress>();
  protected readonly now: () => number;
  protected readonly warnings = new Map<string, WarningKind>();
  protected warningCount = 0;
  private printedAnything = false;
  private ended = false;

  constructor(protected readonly options: ReporterOptions) {
    this.now = options.now ?? Date.now;
  }

  /** A line said before any stage starts (what the command is starting). */
  note(line: string): void {
    this.say(line);
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
    if (stage === 'studies') {
      progress.inProgress = Math.max(progress.inProgress - count, 0);
      // Every study is done: so are its pages, details and media; their counters stop here.
      if (progress.isComplete()) this.finishAll();
    }
    this.onChange(progress);
  }

  studyStarted(_studyId: string): void {
    const studies = this.stages.get('studies') ?? this.implicitStart('studies');
    studies.inProgress += 1;
    this.onChange(studies);
  }

  warn(warning: Warning): void {
    this.warningCount += 1;
    const kind = this.warnings.get(warning.code);
    if (kind) kind.count += 1;
    else this.warnings.set(warning.code, { first: warning, count: 1 });
    this.onWarning();
  }

  /** Retries are counted in the manifest; a person watching needs no line for each. */
  retry(_event: RetryEvent): void {}

  /** A failed study is already a warning; the summary counts the rest. */
  studyDone(_outcome: StudyOutcome): void {}

  /** Ends the display: open stages' last lines, the warnings by kind, then a blank line. */
  stop(): void {
    if (this.ended) return;
    this.ended = true;
    this.finishAll();
    this.endDisplay();
    const width = this.options.tty ? this.options.stream.columns || 100 : undefined;
    for (const kind of this.warnings.values()) this.say(foldedWarning(kind, width));
    if (this.printedAnything) this.blankLine();
  }

  /** Sets what follows (the summary) apart from the progress. */
  protected blankLine(): void {
    this.options.stream.write('\n');
  }

  protected abstract onStart(progress: StageProgress): void;
  protected abstract onChange(progress: StageProgress): void;
  /** A stage's work ended (its counter stops). */
  protected abstract onFinish(progress: StageProgress): void;
  protected onWarning(): void {}
  /** Stops redrawing; afterwards lines go straight to the stream. */
  protected abstract endDisplay(): void;
  protected abstract print(line: string): void;

  /** Prints a line and remembers that something was said (for the blank line at the end). */
  protected say(line: string): void {
    this.printedAnything = true;
    this.print(line);
  }

  private finishAll(): void {
    const now = this.now();
    for (const stage of stageOrder) {
      const progress = this.stages.get(stage);
      if (progress && !progress.finished) {
        progress.finishedAt = now;
        this.onFinish(progress);
      }
    }
  }

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

/**
 * One line for every warning of a kind: its count and the first one. On a terminal the line
 * is cut to its width in the middle (the manifest has each warning in full).
 */
export function foldedWarning(kind: WarningKind, width?: number): string {
  if (kind.count === 1) return fitWidth(formatWarning(kind.first), width);
  const head = `warning: ${formatCount(kind.count)} × ${kind.first.code} (each in the manifest), the first: `;
  return fitWidth(head + formatWarning(kind.first).slice('warning: '.length), width);
}

/** Cut in the middle: a warning's end usually says what happened, its start where. */
function fitWidth(line: string, width: number | undefined): string {
  if (width === undefined || line.length <= width) return line;
  const head = Math.floor((width - 1) * 0.4);
  return `${line.slice(0, head)}…${line.slice(line.length - (width - 1 - head))}`;
}
