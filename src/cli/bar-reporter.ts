/** Live progress bars on an interactive terminal. */
import cliProgress from 'cli-progress';
import type { Stage } from '../pipeline/progress.ts';
import { formatCount } from './format.ts';
import { BaseReporter, type ReporterOptions, type StageProgress } from './reporter-base.ts';

type Row = Stage | 'warnings';

const barWidth = 24;

/**
 * One row per stage, redrawn in place: a bar where the total is known (studies, details), a
 * plain counter where it is not (pages, media), and a warnings count once there is one.
 */
export class BarReporter extends BaseReporter {
  private readonly rows = new Map<Row, cliProgress.SingleBar>();
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
      format: (_options, _params, payload: { row: Row }) => this.renderLine(payload.row),
    });
  }

  protected onStart(progress: StageProgress): void {
    const existing = this.rows.get(progress.stage);
    if (existing) this.multibar.remove(existing);
    this.rows.set(progress.stage, this.multibar.create(progress.total ?? 0, 0, { row: progress.stage }));
  }

  protected onChange(progress: StageProgress): void {
    this.rows.get(progress.stage)?.update(progress.done, { row: progress.stage });
  }

  protected onFinish(progress: StageProgress): void {
    this.onChange(progress);
  }

  protected override onWarning(): void {
    if (this.stopped || this.rows.size === 0) return;
    const row = this.rows.get('warnings') ?? this.multibar.create(0, 0, { row: 'warnings' });
    this.rows.set('warnings', row);
    row.update(this.warningCount, { row: 'warnings' });
  }

  protected print(line: string): void {
    // Until a bar is drawn (and after stop) there is nothing to print above.
    if (this.active) this.multibar.log(`${line}\n`);
    else this.options.stream.write(`${line}\n`);
  }

  protected endDisplay(): void {
    if (!this.active) return;
    this.multibar.update(); // flushes messages logged since the last redraw
    this.multibar.stop();
    this.stopped = true;
  }

  private get active(): boolean {
    return this.rows.size > 0 && !this.stopped;
  }

  private renderLine(row: Row): string {
    if (row === 'warnings') {
      const count = formatCount(this.warningCount);
      return `${'warnings'.padEnd(8)} ${' '.repeat(barWidth)} ${count} (listed by kind at the end)`;
    }
    const progress = this.stages.get(row);
    if (!progress) return '';
    const fraction = progress.fraction();
    // A counter without a total gets no bar: an empty one would look stuck.
    const bar =
      fraction === undefined || progress.total === undefined
        ? ' '.repeat(barWidth)
        : '█'.repeat(Math.round(fraction * barWidth)).padEnd(barWidth, '░');
    return `${row.padEnd(8)} ${bar} ${progress.describe(this.now()).slice(row.length + 1)}`;
  }
}
