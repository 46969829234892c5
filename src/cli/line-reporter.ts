/** Plain progress lines for CI logs and pipes (no terminal to redraw in place). */
import type { Stage } from '../pipeline/progress.ts';
import { formatCount } from './format.ts';
import { BaseReporter, type StageProgress, stageOrder } from './reporter-base.ts';

/** Plain lines: every ~5 s for each stage that moved, and once when a stage completes. */
export class LineReporter extends BaseReporter {
  private timer: NodeJS.Timeout | undefined;
  private readonly lastPrinted = new Map<Stage, string>();

  protected onStart(progress: StageProgress): void {
    this.ensureTimer();
    this.print(this.startText(progress));
  }

  protected onChange(progress: StageProgress): void {
    if (!progress.finished && progress.isComplete()) this.finish(progress);
  }

  protected startText(progress: StageProgress): string {
    return `${progress.stage} started${progress.total === undefined ? '' : ` (${formatCount(progress.total)})`}`;
  }

  protected progressText(progress: StageProgress): string {
    return progress.describe(this.now());
  }

  protected print(line: string): void {
    this.options.stream.write(`${line}\n`);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const stage of stageOrder) {
      const progress = this.stages.get(stage);
      if (progress && !progress.finished) this.finish(progress);
    }
  }

  private finish(progress: StageProgress): void {
    progress.finished = true;
    this.printProgress(progress);
  }

  private ensureTimer(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.printPeriodic(), this.options.intervalMs ?? 5000);
    this.timer.unref();
  }

  private printPeriodic(): void {
    for (const stage of stageOrder) {
      const progress = this.stages.get(stage);
      if (progress && !progress.finished) this.printProgress(progress, true);
    }
  }

  private printProgress(progress: StageProgress, onlyIfMoved = false): void {
    const key = `${progress.done}/${progress.total}/${progress.bytes}`;
    if (onlyIfMoved && this.lastPrinted.get(progress.stage) === key) return;
    this.lastPrinted.set(progress.stage, key);
    this.print(this.progressText(progress));
  }
}
