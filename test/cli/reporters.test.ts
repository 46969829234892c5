import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { formatBytes, formatDuration } from '../../src/cli/format.ts';
import { createReporter } from '../../src/cli/reporters.ts';
import { formatSummary } from '../../src/cli/summary.ts';
import type { RunResult } from '../../src/pipeline/run.ts';

function capture(): { stream: NodeJS.WriteStream; text: () => string } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
  });
  return { stream: stream as unknown as NodeJS.WriteStream, text: () => text };
}

describe('plain line reporter (CI or not a TTY)', () => {
  let clock = 0;
  beforeEach(() => {
    vi.useFakeTimers();
    clock = 0;
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('prints periodic lines with count, percent, rate and eta, and last lines when the studies are done', () => {
    const out = capture();
    const reporter = createReporter({ tty: true, ci: true, stream: out.stream, now: () => clock });
    reporter.start('studies', 2);
    reporter.start('pages');
    reporter.start('details', 5000);
    clock = 4000;
    reporter.tick('pages', 3);
    reporter.tick('details', 1200);
    vi.advanceTimersByTime(5000);
    expect(out.text()).toContain('details started (5,000)\n');
    expect(out.text()).toContain('details 1,200/5,000 (24%) 300/s eta 13s\n');

    // Nothing moved: no repeated line.
    const before = out.text();
    vi.advanceTimersByTime(5000);
    expect(out.text()).toBe(before);

    clock = 10_000;
    reporter.tick('details', 3800);
    reporter.tick('pages', 2);
    reporter.tick('studies', 2);
    const ended = out.text().slice(before.length);
    expect(ended).toBe('studies 2/2 (100%), done\ndetails 5,000/5,000 (100%) 500/s\npages 5\n');

    // The work is over: later, no line again and no falling rate.
    clock = 60_000;
    vi.advanceTimersByTime(20_000);
    reporter.stop();
    expect(out.text()).toBe(`${before}${ended}\n`);
  });

  it('media lines carry bytes and a byte rate; stop() closes open stages', () => {
    const out = capture();
    const reporter = createReporter({ tty: false, ci: false, stream: out.stream, now: () => clock });
    reporter.start('media');
    clock = 2000;
    reporter.tick('media', 3, 4 * 1024 * 1024);
    reporter.stop();
    expect(out.text()).toContain('media 3 files 4.0 MB 2.0 MB/s\n');
  });

  it('folds warnings into one line per kind with its count, then a blank line', () => {
    const out = capture();
    const reporter = createReporter({ tty: false, ci: true, stream: out.stream });
    reporter.warn({ code: 'W_COUNT', message: 'listed 10 responses, desc says 12', link_id: 'cars-2024' });
    for (const row of [3, 21, 35]) {
      reporter.warn({ code: 'xlsx_cell_cut', message: `sheet wide, row ${row}: cut to 32,767 characters` });
    }
    reporter.stop();
    expect(out.text()).toBe(
      'warning: listed 10 responses, desc says 12 (study cars-2024)\n' +
        'warning: 3 × xlsx_cell_cut (each in the manifest), the first: sheet wide, row 3: cut to 32,767 characters\n' +
        '\n',
    );
  });
});

describe('bar reporter (interactive terminal)', () => {
  it('draws a line per stage with the counts', () => {
    const out = capture();
    Object.assign(out.stream, {
      isTTY: true,
      columns: 120,
      cursorTo: () => true,
      clearLine: () => true,
      moveCursor: () => true,
    });
    const reporter = createReporter({ tty: true, ci: false, stream: out.stream });
    reporter.start('studies', 3);
    reporter.tick('studies', 2);
    reporter.start('pages');
    reporter.tick('pages', 4);
    reporter.warn({ code: 'W', message: 'something odd' });
    reporter.stop();
    expect(out.text()).toContain('studies');
    expect(out.text()).toContain('2/3 (66%)');
    // A counter without a total has no bar: an empty one would look stuck.
    expect(out.text()).toMatch(/pages {29}4/);
    expect(out.text()).toContain('warnings');
    expect(out.text()).toMatch(/warning: something odd\n\n$/);
  });
});

const result: RunResult = {
  status: 'partial',
  runDir: 'out/demo/runs/20261121T235500Z',
  tables: [
    { table: 'studies', rows: 3 },
    { table: 'responses', rows: 1234 },
  ],
  files: [
    { path: 'responses.csv', bytes: 2048 },
    { path: 'wide/cars.csv', bytes: 1024 },
    { path: 'wide/bikes.csv', bytes: 1024 },
  ],
  warnings: 2,
  rejects: 1,
  mediaFailed: 0,
  durationMs: 12_300,
};

describe('formatSummary', () => {
  it('names tables, rows, files, bytes, time, problems and where the run is', () => {
    const text = formatSummary(result);
    expect(text).toContain('run finished with problems (partial) in 12s');
    expect(text).toMatch(/table\s+rows\s+csv\n/);
    expect(text).toMatch(/responses\s+1,234\s+2.0 KB\n/);
    expect(text).toMatch(/studies\s+3\s+-\n/);
    expect(text).toContain('3 files, 4.0 KB');
    expect(text).toMatch(/wide\/\s+2 files\s+2.0 KB/);
    expect(text).toContain('warnings: 2   rejects: 1   media failed: 0');
    expect(text).toContain('run: out/demo/runs/20261121T235500Z');
  });

  it('says a run found nothing new, and what latest names, or that there is none', () => {
    const unchanged = { sinceRun: '20261121T235500Z', pointer: 'latest', studies: 1, requests: 2 };
    const base = { ...result, status: 'unchanged' as const, runDir: null };
    expect(formatSummary({ ...base, unchanged: { ...unchanged, latest: '20261121T235500Z' } })).toBe(
      'nothing new since run 20261121T235500Z (1 study checked, 2 requests): no run written, latest still names 20261121T235500Z',
    );
    expect(
      formatSummary({ ...base, unchanged: { ...unchanged, pointer: 'latest-shard-2-of-3', latest: null } }),
    ).toBe(
      'nothing new since run 20261121T235500Z (1 study checked, 2 requests): no run written, there is no latest-shard-2-of-3 here',
    );
  });

  it("gives each table format's files a column, and counts them apart from the other files", () => {
    const files = [
      ...result.files,
      { path: 'responses.parquet', bytes: 4096 },
      { path: 'studies.parquet', bytes: 512 },
    ];
    const text = formatSummary({ ...result, files });
    expect(text).toMatch(/table\s+rows\s+csv\s+parquet\n/);
    expect(text).toMatch(/responses\s+1,234\s+2.0 KB\s+4.0 KB\n/);
    expect(text).toMatch(/studies\s+3\s+-\s+512 B\n/);
    expect(text).toMatch(/wide\/\s+2 files\s+2.0 KB/);
    expect(text).not.toMatch(/parquet\s+\d+ files?/);
  });

  it('says what a fill added to current/ for formats added since, each count in its words', () => {
    const line = (filled: { csvParts: number; workbooks: number }) =>
      formatSummary({ ...result, filled })
        .split('\n')
        .find((text) => text.startsWith('current/: added'));
    const end = 'for the formats added since it was written, from its own data (no request to the service)';
    expect(line({ csvParts: 1_234, workbooks: 1 })).toBe(
      `current/: added 1 xlsx workbook and 1,234 CSV parts ${end}`,
    );
    expect(line({ csvParts: 1, workbooks: 0 })).toBe(`current/: added 1 CSV part ${end}`);
    expect(line({ csvParts: 0, workbooks: 2 })).toBe(`current/: added 2 xlsx workbooks ${end}`);
  });

  it('prints the plan of a dry run', () => {
    const text = formatSummary({
      ...result,
      status: 'planned',
      runDir: null,
      plan: {
        base_url: 'sandbox',
        studies: [
          {
            study_id: 's1',
            link_id: 'cars',
            title: 'Cars',
            expected_responses: 120,
            since: null,
            changed: null,
          },
          {
            study_id: 's2',
            link_id: 'bikes',
            title: 'Bikes',
            expected_responses: 5,
            since: '2026-01-01T00:00:00Z',
            changed: 2,
          },
        ],
        media: false,
        formats: ['csv'],
        out: 'out/demo',
        shard: { index: 2, count: 3 },
        sample: null,
      },
    });
    expect(text).toContain('dry run: nothing was written');
    expect(text).toContain('shard:    2 of 3');
    expect(text).toMatch(/s1\s+cars\s+Cars\s+120\s+all\s+\(everything\)/);
    expect(text).toContain(
      "studies:  2 (about 120 responses in full, from each study's desc; 2 changed since their watermark, listed now)",
    );
    expect(text).toContain('media:    off');
    // The desc's total is not what an incremental run exports: the listed changes are.
    expect(text).toMatch(/bikes\s+Bikes\s+5\s+2 changed\s+2026-01-01T00:00:00Z/);
    expect(text).not.toContain('sample:');
  });

  it('prints the plan of a sample: at most its limit of each study', () => {
    const study = {
      study_id: 's1',
      link_id: 'cars',
      title: 'Cars',
      expected_responses: 120,
      since: null,
      changed: null,
    };
    const plan = {
      base_url: 'sandbox',
      studies: [study],
      media: true,
      formats: ['csv' as const],
      out: 'out/demo',
    };
    const text = formatSummary({
      ...result,
      status: 'planned',
      runDir: null,
      plan: { ...plan, shard: null, sample: { limit: 10 } },
    });
    expect(text).toContain('sample:   at most 10 per study (--limit); nothing else would move');
    expect(text).toMatch(/s1\s+cars\s+Cars\s+120\s+at most 10\s+\(everything\)/);
  });
});

describe('formatting helpers', () => {
  it('bytes and durations', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KB');
    expect(formatDuration(1500)).toBe('1.5s');
    expect(formatDuration(125_000)).toBe('2m05s');
  });
});
