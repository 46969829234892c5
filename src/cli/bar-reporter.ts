/** Live progress bars on an interactive terminal. */
import cliProgress from 'cli-progress';
import type { Stage } from '../pipeline/progress.ts';
import { BaseReporter, type ReporterOptions, type StageProgress } from './reporter-base.ts';

/** Live bars, one per stage, redrawn in place; messages are printed above them. */
export class BarReporter extends BaseReporter {
  private readonly bars = new Map<Stage, cliProgress.SingleBar>();
  private readonly multibar: cliProgress.MultiBar;
  private stopped = false;

  constructor(options: ReporterOptions) {
    super(options);
    this.multibar = new cliProgress.MultiBar({
      stream: options.stream,
      hideCursor: true,
      clearOnComplete: false,
      stopOnComplete: false,
      fps: 8,
      format: (_options, _params, payload: { stage: Stage }) => this.renderLine(payload.stage),
    });
  }

  protected onStart(progress: StageProgress): void {
    const existing = this.bars.get(progress.stage);
    if (existing) this.multibar.remove(existing);
    this.bars.set(progress.stage, this.multibar.create(progress.total ?? 0, 0, { stage: progress.stage }));
  }

  protected onChange(progress: StageProgress): void {
    this.bars.get(progress.stage)?.update(progress.done, { stage: progress.stage });
  }

  protected print(line: string): void {
    // Until a bar is drawn (and after stop) there is nothing to print above.
    if (this.active) this.multibar.log(`${line}\n`);
    else this.options.stream.write(`${line}\n`);
  }

  stop(): void {
    if (!this.active) return;
    this.multibar.update(); // flushes messages logged since the last redraw
    this.multibar.stop();
    this.stopped = true;
  }

  private get active(): boolean {
    return this.bars.size > 0 && !this.stopped;
  }

  private renderLine(stage: Stage): string {
    const progress = this.stages.get(stage);
    if (!progress) return '';
    const width = 24;
    const fraction = progress.total
      ? Math.min(progress.done / progress.total, 1)
      : progress.isComplete()
        ? 1
        : 0;
    const filled = Math.round(fraction * width);
    const bar =
      progress.total === undefined ? '·'.repeat(width) : '█'.repeat(filled) + '░'.repeat(width - filled);
    return `${stage.padEnd(8)} ${bar} ${progress.describe(this.now()).slice(stage.length + 1)}`;
  }
}
