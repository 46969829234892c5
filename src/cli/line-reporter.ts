/** Plain progress lines for CI logs and pipes (no terminal to redraw in place). */
import type { Stage } from '../pipeline/progress.ts';
import { formatCount } from './format.ts';
import { BaseReporter, type StageProgress, stageOrder } from './reporter-base.ts';

/** Plain lines: every ~5 s for each stage that moved, and once when a stage's work ends. */
export class LineReporter extends BaseReporter {
  private timer: NodeJS.Timeout | undefined;
  private readonly lastPrinted = new Map<Stage, string>();
  private warningsPrinted = 0;

  protected onStart(progress: StageProgress): void {
    this.ensureTimer();
    this.say(this.startText(progress));
  }

  /** Lines come every few seconds, not on each tick. */
  protected onChange(): void {}

  protected onFinish(progress: StageProgress): void {
    this.printProgress(progress);
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

  protected endDisplay(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
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
    // Warnings are listed by kind at the end; meanwhile the log says how many there are.
    if (this.warningCount > this.warningsPrinted) {
      this.warningsPrinted = this.warningCount;
      this.say(`warnings so far: ${formatCount(this.warningCount)} (listed by kind at the end)`);
    }
  }

  private printProgress(progress: StageProgress, onlyIfMoved = false): void {
    const key = `${progress.done}/${progress.total}/${progress.bytes}/${progress.finished}`;
    if (onlyIfMoved && this.lastPrinted.get(progress.stage) === key) return;
    this.lastPrinted.set(progress.stage, key);
    this.say(this.progressText(progress));
  }
}
