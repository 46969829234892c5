/**
 * The ProgressReporter implementations the command line chooses between: live bars per
 * stage on an interactive terminal, plain periodic lines for CI logs and pipes. Progress
 * goes to stderr; the final summary (formatSummary) goes to stdout.
 */
import cliProgress from 'cli-progress';
import type { Warning } from '../records.ts';
import type { ProgressReporter, Stage } from './progress.ts';
import type { RunResult } from './run.ts';

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

export function createReporter(options: ReporterOptions): ProgressReporter {
  return options.tty && !options.ci ? new BarReporter(options) : new LineReporter(options);
}

const stageOrder: Stage[] = ['studies', 'pages', 'details', 'media'];

const stageLabel: Record<Stage, string> = {
  studies: 'studies',
  pages: 'pages',
  details: 'details',
  media: 'media',
};

/** Counters of one stage; rates and ETA are derived from them. */
class StageProgress {
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
    const parts = [stageLabel[this.stage], this.countText()];
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
abstract class BaseReporter implements ProgressReporter {
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

  setTotal(stage: Stage, total: number): void {
    const progress = this.stages.get(stage) ?? this.implicitStart(stage);
    progress.total = total;
    this.onChange(progress);
  }

  info(message: string): void {
    this.print(message);
  }

  warn(warning: Warning): void {
    this.print(formatWarning(warning));
  }

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

/** Plain lines: every ~5 s for each stage that moved, and once when a stage completes. */
class LineReporter extends BaseReporter {
  private timer: NodeJS.Timeout | undefined;
  private readonly lastPrinted = new Map<Stage, string>();

  protected onStart(progress: StageProgress): void {
    this.ensureTimer();
    this.print(
      `${stageLabel[progress.stage]} started${progress.total === undefined ? '' : ` (${formatCount(progress.total)})`}`,
    );
  }

  protected onChange(progress: StageProgress): void {
    if (!progress.finished && progress.isComplete()) this.finish(progress);
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
    this.print(progress.describe(this.now()));
  }
}

/** Live bars, one per stage, redrawn in place; messages are printed above them. */
class BarReporter extends BaseReporter {
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
    return `${stageLabel[stage].padEnd(8)} ${bar} ${progress.describe(this.now()).slice(stageLabel[stage].length + 1)}`;
  }
}

export function formatWarning(warning: Warning): string {
  const study = warning.link_id ?? warning.study_id;
  const suffix = study && !warning.message.includes(study) ? ` (study ${study})` : '';
  return `warning: ${warning.message}${suffix}`;
}

// ---------------------------------------------------------------------------------------
// The final summary, printed on stdout.

export function formatSummary(result: RunResult): string {
  if (result.status === 'planned') return formatPlan(result);
  const lines: string[] = [];
  const headline = result.status === 'complete' ? 'run complete' : 'run finished with problems (partial)';
  lines.push(`${headline} in ${formatDuration(result.durationMs)}`);
  const totalBytes = result.files.reduce((sum, file) => sum + file.bytes, 0);
  lines.push('', `${formatCount(result.files.length)} files, ${formatBytes(totalBytes)}`);
  lines.push(...tableLines(result));
  const others = groupFiles(result.files.filter((file) => !isTableFile(file.path, result)));
  if (others.length > 0) lines.push('', ...alignRows(others, ['left', 'right', 'right']));
  lines.push(
    '',
    `warnings: ${formatCount(result.warnings)}   rejects: ${formatCount(result.rejects)}   media failed: ${formatCount(result.mediaFailed)}`,
  );
  if (result.status === 'partial') {
    lines.push(
      '  every rejected record and failed media file is listed in manifest.json (records in rejects.jsonl)',
    );
  }
  if (result.runDir) lines.push(`run: ${result.runDir}`);
  return lines.join('\n');
}

function formatPlan(result: RunResult): string {
  const plan = result.plan;
  if (!plan) return 'dry run: nothing planned';
  const expected = plan.studies.reduce((sum, study) => sum + (study.expected_responses ?? 0), 0);
  const lines = [
    `dry run: nothing was written`,
    `source:   ${plan.base_url}`,
    `studies:  ${plan.studies.length} (about ${formatCount(expected)} responses, from each study's desc)`,
    `media:    ${plan.media ? 'on' : 'off'}`,
    `formats:  ${plan.formats.join(', ')}`,
    `out:      ${plan.out}`,
    ...(plan.shard
      ? [`shard:    ${plan.shard.index} of ${plan.shard.count} (studies by a hash of their permanent id)`]
      : []),
    '',
  ];
  const header = ['study_id', 'link_id', 'title', 'expected responses', 'since'];
  const rows = plan.studies.map((study) => [
    study.study_id,
    study.link_id,
    truncate(study.title, 40),
    study.expected_responses === null ? '?' : formatCount(study.expected_responses),
    study.since ?? '(everything)',
  ]);
  lines.push(...alignRows([header, ...rows], ['left', 'left', 'left', 'right', 'left']));
  return lines.join('\n');
}

/** One line per table: rows, then the bytes of each format's file. */
function tableLines(result: RunResult): string[] {
  const formatsSeen = [...new Set(result.files.map((file) => tableFileFormat(file.path)).filter(isString))];
  const header = ['  table', 'rows', ...formatsSeen];
  const rows = result.tables.map((table) => [
    `  ${table.table}`,
    formatCount(table.rows),
    ...formatsSeen.map((format) => {
      const file = result.files.find((f) => f.path === `${table.table}.${format}`);
      return file ? formatBytes(file.bytes) : '-';
    }),
  ]);
  return alignRows([header, ...rows], ['left', 'right', ...formatsSeen.map(() => 'right' as const)]);
}

function tableFileFormat(path: string): string | undefined {
  return /^[^/\\]+\.(csv|parquet)$/.exec(path)?.[1];
}

function isTableFile(path: string, result: RunResult): boolean {
  const format = tableFileFormat(path);
  return format !== undefined && result.tables.some((table) => path === `${table.table}.${format}`);
}

function isString(value: string | undefined): value is string {
  return value !== undefined;
}

/** Files in the run's top folder one per line; sub-folders (wide/, raw/) summed. */
function groupFiles(files: { path: string; bytes: number }[]): string[][] {
  const groups = new Map<string, { count: number; bytes: number }>();
  for (const file of files) {
    const slash = file.path.replaceAll('\\', '/').indexOf('/');
    const name = slash === -1 ? file.path : `${file.path.slice(0, slash)}/`;
    const group = groups.get(name) ?? { count: 0, bytes: 0 };
    group.count += 1;
    group.bytes += file.bytes;
    groups.set(name, group);
  }
  return [...groups].map(([name, group]) => [
    `  ${name}`,
    name.endsWith('/') ? `${group.count} file${group.count === 1 ? '' : 's'}` : '',
    formatBytes(group.bytes),
  ]);
}

// ---------------------------------------------------------------------------------------
// Small formatting helpers, shared with the command line.

export function alignRows(rows: string[][], align: ('left' | 'right')[] = []): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, index) => {
      widths[index] = Math.max(widths[index] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, index) => {
        const width = widths[index] ?? 0;
        return align[index] === 'right' ? cell.padStart(width) : cell.padEnd(width);
      })
      .join('  ')
      .trimEnd(),
  );
}

export function formatCount(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

function formatRate(perSecond: number): string {
  return perSecond >= 10 ? formatCount(perSecond) : perSecond.toFixed(1);
}

export function formatBytes(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${Math.round(value)} B` : `${value.toFixed(1)} ${units[unit]}`;
}

export function formatDuration(ms: number): string {
  const seconds = ms / 1000;
  if (seconds < 10) return `${seconds.toFixed(1)}s`;
  if (seconds < 60) return `${Math.round(seconds)}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${String(Math.floor(seconds % 60)).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, '0')}m`;
}

function truncate(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}
