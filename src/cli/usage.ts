/**
 * Command-line usage errors (exit 2) and the checks of option values that yargs' types do
 * not express: ISO dates, format lists, integer ranges.
 */
import { type Format, formats, formatsRule, isTableFormat } from '../config/schema.ts';
import { exitCodes, StudyExportError } from '../errors.ts';
import { studyFormats, tableFormats } from '../output/formats/index.ts';

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
  if (items.length === 0) throw new Error(`--formats: expected ${formatsRule}`);
  for (const item of items) {
    if (!(formats as readonly string[]).includes(item)) {
      throw new Error(`--formats: expected ${formatsRule}; found "${item}"`);
    }
  }
  const chosen = [...new Set(items)] as Format[];
  if (!chosen.some(isTableFormat)) {
    const tableNames = tableFormats.map((format) => format.name);
    const example = [tableNames[0], ...chosen].join(',');
    const adds = studyFormats
      .filter((format) => chosen.includes(format.name as Format))
      .map((format) => `${format.name} adds ${format.help}`);
    throw new Error(
      `--formats: ${chosen.join(', ')} needs ${tableNames.join(' or ')} beside it, e.g. --formats ${example} (the tables are written in ${tableNames.join(' or ')}; ${adds.join(', ')})`,
    );
  }
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
