/** Small value helpers shared by the transform functions. */
import { redact } from '../redact.ts';

/** A service timestamp as ISO 8601 UTC ("2026-11-21T23:55:00.000Z"), zone-less read as UTC. */
export { toIsoUtc } from '../util/timestamp.ts';

/** A deep copy of a JSON-like value in which every string has its URLs redacted. */
export function redactUrlsDeep(value: unknown): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map(redactUrlsDeep);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, redactUrlsDeep(inner)]));
  }
  return value;
}

/**
 * The `extra` column: the undeclared fields as JSON text, or null when there are none.
 * Extra fields are unknown to us, so any URL inside them is redacted (signed links expire
 * and must never reach a table).
 */
export function extraJson(extra: Record<string, unknown> | null): string | null {
  return extra === null ? null : JSON.stringify(redactUrlsDeep(extra));
}
