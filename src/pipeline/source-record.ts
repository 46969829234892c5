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
 *
 * Shards record it each in an object of their own, sources/shard-K-of-N.json, since N shards
 * starting on an empty output would otherwise all write source.json at once. The newest record
 * (by recorded_at) of source.json and sources/ is the service the output belongs to, so a
 * change accepted by one writer holds for all.
 */
import { ConfigError } from '../errors.ts';
import { SOURCE_FILE, SOURCES_DIR, sourcePath } from '../output/layout.ts';
import { redact } from '../redact.ts';
import type { Shard } from '../shard.ts';
import type { Storage } from '../storage/types.ts';

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
  options: { accept: boolean; dryRun: boolean; shard?: Shard | undefined },
): Promise<SourceCheck> {
  const current = sourceOf(baseUrl);
  const recorded = await readSource(storage);
  if (recorded?.base_url === current) return { toRecord: null };
  if (recorded !== null && options.accept) {
    if (!options.dryRun) await recordSource(storage, current, new Date(), options.shard);
    return { toRecord: null };
  }
  if (recorded !== null) {
    const where = storage.describe(recorded.path);
    throw new ConfigError(
      `${storage.describe('')}: this output belongs to ${describe(recorded.base_url)} (${where}), but the pipeline now reads ${describe(current)}; one output never mixes two services: give the new service its own pipeline name (study-export init NAME), or run with --accept-new-source if it is the same data at a new address`,
      { context: { file: where, operation: 'source check' } },
    );
  }
  return { toRecord: current };
}

/** Writes the run's record: before the first run's commit, or when a change is accepted. */
export async function recordSource(
  storage: Storage,
  source: string,
  at: Date,
  shard?: Shard | undefined,
): Promise<void> {
  const record = { version: 1, base_url: source, recorded_at: at.toISOString() };
  await storage.put(sourcePath(shard), `${JSON.stringify(record, null, 2)}\n`);
}

interface SourceRecord {
  path: string;
  base_url: string;
  recorded_at: string;
}

/** The newest record of source.json and sources/*.json; null when there is none. */
async function readSource(storage: Storage): Promise<SourceRecord | null> {
  const paths = [SOURCE_FILE];
  for await (const file of storage.list(SOURCES_DIR)) {
    if (/^[^/]+\.json$/.test(file.path)) paths.push(`${SOURCES_DIR}/${file.path}`);
  }
  let newest: SourceRecord | null = null;
  for (const path of paths) {
    const record = await readRecord(storage, path);
    if (record && (newest === null || record.recorded_at > newest.recorded_at)) newest = record;
  }
  return newest;
}

async function readRecord(storage: Storage, path: string): Promise<SourceRecord | null> {
  const bytes = await storage.read(path);
  if (bytes === null) return null;
  try {
    const record = JSON.parse(bytes.toString('utf8')) as { base_url?: unknown; recorded_at?: unknown };
    if (typeof record.base_url === 'string' && record.base_url !== '') {
      const at = typeof record.recorded_at === 'string' ? record.recorded_at : '';
      return { path, base_url: record.base_url, recorded_at: at };
    }
  } catch {}
  throw new ConfigError(
    `${storage.describe(path)}: expected {"base_url": "..."} naming the service this output belongs to; fix it, or remove it to record the service of the next run`,
    { context: { file: storage.describe(path) } },
  );
}

function describe(source: string): string {
  return source === 'sandbox' ? 'the embedded sandbox' : redact(source);
}
