/**
 * `npm run bench:statistics` (node --import tsx bench/statistics.ts [--rounds 3] [--responses
 * 5000]): one study's .sav and .dta against its wide CSV, each written by the writer a run uses
 * (rows added in a shuffled order, spilled, the file written once the columns are known), in a
 * process of its own, at N and 10 N responses, formats alternating in each round.
 *
 * Figures: sav_vs_wide and dta_vs_wide = the file's time over the wide CSV's at 10 N (the median
 * round; at most 2.0); rss_10x_vs_1x for each = its peak RSS at 10 N over that at N (memory flat
 * in the responses). Writes bench/results/<UTC time>-statistics.json and latest-statistics.json.
 */
import { runStep } from './processes.ts';
import { machine, medianBy, option, publishResults, round } from './report.ts';

const log = (message: string) => process.stderr.write(`[bench:statistics] ${message}\n`);

interface StepResult {
  ms: number;
  make_rows_ms: number;
  bytes: number;
  maxrss_mb: number;
}

const formats = ['wide', 'sav', 'dta'] as const;
type Format = (typeof formats)[number];

async function main(): Promise<void> {
  const rounds = option('rounds', 3);
  const responses = option('responses', 5000);
  const sizes: Record<string, unknown> = {};
  const rss: Record<string, Record<Format, number>> = {};
  const ratios: Record<string, number> = {};
  for (const [label, factor] of [
    ['1x', 1],
    ['10x', 10],
  ] as const) {
    const measured: Record<Format, StepResult>[] = [];
    for (let r = 0; r < rounds; r++) {
      const round: Partial<Record<Format, StepResult>> = {};
      for (const format of formats) {
        round[format] = await runStep<StepResult>('statistics', { format, responses: responses * factor });
      }
      const done = round as Record<Format, StepResult>;
      log(
        `${label} round ${r + 1}: wide ${Math.round(done.wide.ms)} ms, sav ${Math.round(done.sav.ms)} ms, dta ${Math.round(done.dta.ms)} ms`,
      );
      measured.push(done);
    }
    rss[label] = Object.fromEntries(
      formats.map((f) => [f, Math.max(...measured.map((m) => m[f].maxrss_mb))]),
    ) as Record<Format, number>;
    const entry: Record<string, unknown> = { responses: responses * factor, maxrss_mb: rss[label] };
    for (const format of ['sav', 'dta'] as const) {
      const median = medianBy(measured, (m) => m[format].ms / m.wide.ms);
      if (!median) throw new Error('bench:statistics: no round');
      const ratio = median[format].ms / median.wide.ms;
      if (label === '10x') ratios[format] = ratio;
      entry[format] = {
        vs_wide: round(ratio, 3),
        rounds: measured.map((m) => round(m[format].ms / m.wide.ms, 3)),
        s: round(median[format].ms / 1000, 2),
        wide_s: round(median.wide.ms / 1000, 2),
        bytes: median[format].bytes,
        wide_bytes: median.wide.bytes,
      };
    }
    sizes[label] = entry;
  }
  const rssRatio = (format: Format) => round((rss['10x']?.[format] ?? 0) / (rss['1x']?.[format] ?? 1), 3);
  const result = {
    machine: machine(),
    sav_vs_wide: round(ratios['sav'] ?? 0, 3),
    dta_vs_wide: round(ratios['dta'] ?? 0, 3),
    rss_10x_vs_1x: { wide: rssRatio('wide'), sav: rssRatio('sav'), dta: rssRatio('dta') },
    sizes,
  };
  await publishResults(result, '-statistics', log);
}

await main();
