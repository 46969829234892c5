/** Shared test helpers: sinks that keep everything in memory, and a client for a sandbox. */
import { type ApiClient, type ApiClientOptions, createApiClient } from '../../src/api/client.ts';
import type { ExtractSinks, RawRecord, Reject, Warning } from '../../src/records.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';

export interface MemorySinks extends ExtractSinks {
  rawRecords: RawRecord[];
  rejected: Reject[];
  warnings: Warning[];
}

export function memorySinks(): MemorySinks {
  const rawRecords: RawRecord[] = [];
  const rejected: Reject[] = [];
  const warnings: Warning[] = [];
  return {
    rawRecords,
    rejected,
    warnings,
    // As raw/ stores a record: with the body's bytes as its payload when they came with it
    // (a listing page is never parsed whole, so its record has no other payload).
    raw: {
      write: (record, json) =>
        rawRecords.push(
          json ? { ...record, payload: JSON.parse(Buffer.from(json).toString('utf8')) } : record,
        ),
    },
    rejects: { write: (reject) => rejected.push(reject) },
    warn: (warning) => warnings.push(warning),
  };
}

/** A client for the sandbox with fast backoff, so fault tests finish quickly. */
export function sandboxClient(sandbox: Sandbox, overrides: Partial<ApiClientOptions> = {}): ApiClient {
  return createApiClient({
    baseUrl: sandbox.base_url,
    apiKey: sandbox.api_key,
    apiKeyEnv: 'STUDY_API_KEY',
    concurrency: 4,
    timeoutMs: 5_000,
    retries: 8,
    maxRetryAfterMs: 50,
    backoff: { baseMs: 5, maxMs: 50 },
    ...overrides,
  });
}

export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

/** Deterministic order for set comparisons. */
export function sortedJson<T>(items: T[], key: (item: T) => string): string[] {
  return items
    .map((item) => [key(item), JSON.stringify(item)] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([, json]) => json);
}
