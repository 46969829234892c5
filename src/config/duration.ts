/**
 * A duration as the pipeline file writes it: a whole number and a unit (d, h, m or s), e.g.
 * `7d`, `12h`, `30m`; `0` alone means never. Four units cover a schedule's needs, so a pattern
 * and a table say it all.
 */
export const durationPattern = /^(?:0|[1-9]\d{0,8}[dhms])$/;

export const durationRule = 'expected a duration such as 7d, 12h or 30m, or 0 for never';

const unitMs = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000 } as const;

/** The duration in milliseconds; 0 for `0` (never). Throws on text the pattern refuses. */
export function durationMs(text: string): number {
  if (!durationPattern.test(text)) throw new Error(`${text}: ${durationRule}`);
  if (text === '0') return 0;
  const unit = text.at(-1) as keyof typeof unitMs;
  return Number(text.slice(0, -1)) * unitMs[unit];
}
