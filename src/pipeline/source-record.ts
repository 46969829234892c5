/**
 * The service a pipeline's output belongs to, kept beside its runs as source.json (in the
 * folder or the bucket) from the first run committed there. Watermarks, current/ and
 * `latest` describe that one service: a run whose base_url names another stops before any
 * request (exit 2), naming both, unless told with --accept-new-source that it is the same
 * data at a new address. The embedded sandbox is a service of its own ("sandbox"), so its
 * made-up studies never mix with a real service's.
 *
 * The address is recorded without credentials, query or fragment (never a key); the host is
 * compared as URL parsing normalises it (lower case, default port dropped), the path without
 * a trailing slash.
 */
import { ConfigError } from '../errors.ts';
import { redact } from '../redact.ts';
import type { Storage } from '../storage/types.ts';

export const SOURCE_FILE = 'source.json';

/** base_url as recorded and compared. */
export function sourceOf(baseUrl: string): string {
  if (baseUrl === 'sandbox') return 'sandbox';
  const url = new URL(baseUrl);
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
}

export interface SourceCheck {
  /** What this run records at its commit; null when source.json already says it. */
  toRecord: string | null;
}

/**
 * Compares the pipeline's recorded service with this run's. Throws a ConfigError (exit 2)
 * when they differ and the change was not accepted; an accepted change is recorded at once
 * (except by a dry run), so it holds even when this run finds nothing new or fails.
 */
export async function checkSource(
  storage: Storage,
  baseUrl: string,
  options: { accept: boolean; dryRun: boolean },
): Promise<SourceCheck> {
  const current = sourceOf(baseUrl);
  const recorded = await readSource(storage);
  if (recorded === current) return { toRecord: null };
  if (recorded !== null && options.accept) {
    if (!options.dryRun) await recordSource(storage, current, new Date());
    return { toRecord: null };
  }
  if (recorded !== null) {
    throw new ConfigError(
      `${storage.describe('')}: this output belongs to ${describe(recorded)} (${storage.describe(SOURCE_FILE)}), but the pipeline now reads ${describe(current)}; one output never mixes two services: give the new service its own pipeline name (study-export init NAME), or run with --accept-new-source if it is the same data at a new address`,
      { context: { file: storage.describe(SOURCE_FILE), operation: 'source check' } },
    );
  }
  return { toRecord: current };
}

/** Writes source.json: before the first run's commit, or when a change is accepted. */
export async function recordSource(storage: Storage, source: string, at: Date): Promise<void> {
  const record = { version: 1, base_url: source, recorded_at: at.toISOString() };
  await storage.put(SOURCE_FILE, `${JSON.stringify(record, null, 2)}\n`);
}

async function readSource(storage: Storage): Promise<string | null> {
  const bytes = await storage.read(SOURCE_FILE);
  if (bytes === null) return null;
  try {
    const record = JSON.parse(bytes.toString('utf8')) as { base_url?: unknown };
    if (typeof record.base_url === 'string' && record.base_url !== '') return record.base_url;
  } catch {}
  throw new ConfigError(
    `${storage.describe(SOURCE_FILE)}: expected {"base_url": "..."} naming the service this output belongs to; fix it, or remove it to record the service of the next run`,
    { context: { file: storage.describe(SOURCE_FILE) } },
  );
}

function describe(source: string): string {
  return source === 'sandbox' ? 'the embedded sandbox' : redact(source);
}
