/**
 * Command-line usage errors (exit 2) and the checks of option values that yargs' types do
 * not express: ISO dates, format lists, integer ranges.
 */
import { type Format, formats, isTableFormat, tableFormatMissing } from '../config/schema.ts';
import { exitCodes, StudyExportError } from '../errors.ts';

/** The command line is wrong: unknown option, bad value, missing argument. */
export class UsageError extends StudyExportError {
  override readonly exitCode = exitCodes.usage;
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super('E_USAGE', message);
  }
}

const isoDate = /^\d{4}-\d{2}-\d{2}$/;
const isoTimestamp = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * --since: an ISO 8601 date or timestamp, normalised to UTC with a Z. A date or a time
 * without an offset is read as UTC, like every timestamp the product writes.
 */
export function parseSince(value: string): string {
  const text = value.trim();
  if (!isoDate.test(text) && !isoTimestamp.test(text)) {
    throw new Error(
      `--since: expected an ISO 8601 date or timestamp (e.g. 2026-01-31 or 2026-01-31T12:00:00Z), found "${value}"`,
    );
  }
  const hasZone = /(Z|[+-]\d{2}:?\d{2})$/i.test(text) && !isoDate.test(text);
  const utc = isoDate.test(text) ? `${text}T00:00:00Z` : hasZone ? text : `${text}Z`;
  const time = Date.parse(utc);
  if (Number.isNaN(time)) throw new Error(`--since: "${value}" is not a real date`);
  return new Date(time).toISOString();
}

/** --formats csv,parquet,xlsx (also accepts repeated --formats csv --formats parquet). */
export function parseFormats(value: string | string[]): Format[] {
  const items = (Array.isArray(value) ? value : [value])
    .flatMap((item) => String(item).split(','))
    .map((item) => item.trim().toLowerCase())
    .filter((item) => item !== '');
  if (items.length === 0) throw new Error(`--formats: expected one or more of: ${formats.join(', ')}`);
  for (const item of items) {
    if (!(formats as readonly string[]).includes(item)) {
      throw new Error(`--formats: expected one or more of: ${formats.join(', ')}, found "${item}"`);
    }
  }
  const chosen = [...new Set(items)] as Format[];
  if (!chosen.some(isTableFormat)) throw new Error(`--formats: ${tableFormatMissing}`);
  return chosen;
}

/** An integer option within bounds; yargs has already made it a number (or NaN). */
export function integerOption(name: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: unknown): number | undefined => {
    if (value === undefined) return undefined;
    const number = typeof value === 'number' ? value : Number(value);
    if (!Number.isInteger(number) || number < min || number > max) {
      const range =
        max === Number.MAX_SAFE_INTEGER ? `an integer of ${min} or more` : `an integer from ${min} to ${max}`;
      const found = Number.isNaN(number) ? 'something else' : `"${String(value)}"`;
      throw new Error(`--${name}: expected ${range}, found ${found}`);
    }
    return number;
  };
}

/** A positive number (not necessarily whole), e.g. --media-scale 0.5. */
export function positiveNumberOption(name: string) {
  return (value: unknown): number | undefined => {
    if (value === undefined) return undefined;
    const number = typeof value === 'number' ? value : Number(value);
    if (!Number.isFinite(number) || number <= 0) {
      const found = Number.isNaN(number) ? 'something else' : `"${String(value)}"`;
      throw new Error(`--${name}: expected a positive number, found ${found}`);
    }
    return number;
  };
}

/**
 * The known option an unknown one most likely meant: within one edit per three letters
 * (--ful, --formts, --dryrun), or one it begins (--conc); undefined when none is that close.
 */
export function closestOption(name: string, known: string[]): string | undefined {
  const candidates = known.filter((option) => option.length > 1 && option !== name);
  const limit = Math.max(1, Math.floor(name.length / 3));
  let best: { option: string; distance: number } | undefined;
  for (const option of candidates) {
    const distance = editDistance(name.toLowerCase(), option);
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { option, distance };
  }
  if (best) return best.option;
  return name.length >= 3 ? candidates.find((option) => option.startsWith(name.toLowerCase())) : undefined;
}

/** Edit distance: insertions, deletions, substitutions and swaps of two neighbours (--prot). */
function editDistance(a: string, b: string): number {
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, index) => index)];
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    const above = rows[i - 1] as number[];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(
        (above[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (above[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      }
      row[j] = best;
    }
    rows.push(row);
  }
  return (rows[a.length] as number[])[b.length] as number;
}
