/**
 * Timestamps with one meaning. The service's timestamps are UTC (spec 2.1, 2.2), so a
 * timestamp without a zone ("2025-03-12T18:18:53.934") is read as UTC, never in the machine's
 * zone as `new Date(text)` would; a date alone is midnight UTC. Fractions are kept to the
 * microsecond, the unit of the tables' Parquet timestamps (digits beyond it are cut).
 *
 * One grammar, ISO 8601 as services write it: a date, then optionally "T" (or a space) and a
 * time of hours and minutes, optional seconds and fraction, and an optional zone (Z or an
 * offset ±hh, ±hhmm, ±hh:mm). Anything else is not a timestamp.
 */

/** An instant to the microsecond: epoch milliseconds and the microseconds within the millisecond. */
export interface Instant {
  ms: number;
  /** 0 to 999. */
  micros: number;
}

const pattern =
  /^([+-]\d{6}|\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,12}))?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?)?$/;

/** The instant `text` names, or null when it is not an ISO 8601 date or timestamp. */
export function parseTimestamp(text: string): Instant | null {
  const match = pattern.exec(text.trim());
  if (!match) return null;
  const [, year, month, day, hour = '0', minute = '0', second = '0', fraction = '', zone = 'Z'] = match;
  const digits = fraction.padEnd(6, '0');
  const fields = [Number(month), Number(day), Number(hour), Number(minute), Number(second)];
  const [mo, d, h, mi, s] = fields as [number, number, number, number, number];
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return null;
  const offset = zoneOffsetMinutes(zone);
  if (offset === null) return null;
  const date = new Date(0);
  date.setUTCFullYear(Number(year), mo - 1, d);
  // A day the month does not have (February 30) rolls over: not a date.
  if (date.getUTCDate() !== d) return null;
  date.setUTCHours(h, mi - offset, s, Number(digits.slice(0, 3)));
  const ms = date.getTime();
  if (Number.isNaN(ms)) return null;
  return { ms, micros: Number(digits.slice(3, 6)) };
}

function zoneOffsetMinutes(zone: string): number | null {
  if (zone === 'Z' || zone === 'z') return 0;
  const sign = zone.startsWith('-') ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = digits.length > 2 ? Number(digits.slice(2, 4)) : 0;
  if (hours > 23 || minutes > 59) return null;
  return sign * (hours * 60 + minutes);
}

/** Whether `text` is a timestamp parseTimestamp reads. */
export function isTimestamp(text: string): boolean {
  return parseTimestamp(text) !== null;
}

/**
 * The instant in the tables' form: ISO 8601 UTC with milliseconds ("2025-03-12T18:18:53.934Z"),
 * or with microseconds when it has any below the millisecond ("2025-03-12T18:18:53.934123Z").
 */
export function formatInstant(instant: Instant): string {
  const iso = new Date(instant.ms).toISOString();
  return instant.micros === 0 ? iso : `${iso.slice(0, -1)}${String(instant.micros).padStart(3, '0')}Z`;
}

/** A service timestamp in the tables' form; throws on text that is not one (validated before). */
export function toIsoUtc(text: string): string {
  const instant = parseTimestamp(text);
  if (!instant) throw new RangeError(`not an ISO 8601 timestamp: ${JSON.stringify(text)}`);
  return formatInstant(instant);
}

/** Microseconds since the epoch (Parquet's TIMESTAMP(MICROS)) of a timestamp. */
export function epochMicros(text: string): bigint {
  const instant = parseTimestamp(text);
  if (!instant) throw new RangeError(`not an ISO 8601 timestamp: ${JSON.stringify(text)}`);
  return BigInt(instant.ms) * 1000n + BigInt(instant.micros);
}

/** The tables' form of microseconds since the epoch. */
export function fromEpochMicros(micros: bigint): string {
  const ms = micros / 1000n - (micros % 1000n < 0n ? 1n : 0n);
  return formatInstant({ ms: Number(ms), micros: Number(micros - ms * 1000n) });
}

/** Negative when `a` is earlier than `b`, 0 when they are the same instant, else positive. */
export function compareInstants(a: Instant, b: Instant): number {
  return a.ms - b.ms || a.micros - b.micros;
}
