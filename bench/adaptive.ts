/**
 * Does adaptive concurrency help? The client lowers its concurrency on sustained 429s and
 * recovers afterwards; this measures whether that helps.
 *
 * The sandbox answers 429 (Retry-After 1 s) to API requests beyond `max_in_flight` at once:
 * a rate limit that depends on load, as real services have. The same extract (every page
 * and every detail of one study) runs twice against it with 16 requests allowed in flight:
 * once with the limit fixed, once adaptive. Reported: wall time and 429s of each, and the
 * ratios adaptive / fixed (below 1 means adaptive helps).
 *
 *     node --import tsx bench/adaptive.ts [--responses N]
 */
import { parseArgs } from 'node:util';
import { type ApiClient, createApiClient } from '../src/api/client.ts';
import type { Study } from '../src/api/resources.ts';
import { fetchDetails, listResponses, listStudies } from '../src/extract/index.ts';
import type { ExtractSinks } from '../src/records.ts';
import { startSandbox } from '../src/sandbox/index.ts';

const CONCURRENCY = 16;
const SERVER_LIMIT = 4;

interface Arm {
  seconds: number;
  rateLimited: number;
  requests: number;
  details: number;
}

const sinks: ExtractSinks = { raw: { write() {} }, rejects: { write() {} }, warn() {} };

async function extractAll(client: ApiClient, study: Study): Promise<number> {
  const listed = listResponses(client, study, { perPage: 1000, includeInProgress: true }, sinks);
  let details = 0;
  for await (const { detail } of fetchDetails(client, study, listed, sinks, { window: CONCURRENCY * 2 })) {
    if (detail) details += 1;
  }
  return details;
}

async function measure(adaptive: boolean, responses: number): Promise<Arm> {
  const sandbox = await startSandbox({
    seed: 7,
    studies: 1,
    responses,
    latencyMs: 20,
    faults: `max_in_flight=${SERVER_LIMIT},retry_after=1s`,
  });
  try {
    const client = createApiClient({
      baseUrl: sandbox.base_url,
      apiKey: sandbox.api_key,
      apiKeyEnv: 'BENCH_KEY',
      concurrency: CONCURRENCY,
      timeoutMs: 30_000,
      retries: 50,
      // A threshold no run reaches keeps the limit fixed.
      ...(adaptive ? {} : { adaptive: { threshold: Number.POSITIVE_INFINITY } }),
    });
    const [study] = await listStudies(client, sinks);
    const started = performance.now();
    const details = await extractAll(client, study!);
    const seconds = (performance.now() - started) / 1000;
    client.close();
    const api = sandbox.requests.filter((r) => r.listener === 'api');
    return {
      seconds,
      rateLimited: api.filter((r) => r.status === 429).length,
      requests: api.length,
      details,
    };
  } finally {
    await sandbox.close();
  }
}

export async function adaptiveFigures(responses: number) {
  const fixed = await measure(false, responses);
  const adaptive = await measure(true, responses);
  if (fixed.details !== responses || adaptive.details !== responses) {
    throw new Error(
      `expected ${responses} details from each arm, got ${fixed.details} and ${adaptive.details}`,
    );
  }
  return {
    responses,
    concurrency: CONCURRENCY,
    server_max_in_flight: SERVER_LIMIT,
    fixed,
    adaptive,
    adaptive_time_ratio: round(adaptive.seconds / fixed.seconds),
    adaptive_429_ratio: round(adaptive.rateLimited / Math.max(1, fixed.rateLimited)),
  };
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { responses: { type: 'string', default: '300' } } });
  console.log(JSON.stringify(await adaptiveFigures(Number(values.responses))));
}
