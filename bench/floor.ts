/**
 * The raw-fetch floor: the same HTTP requests as a full run (list_surveys, every study's
 * response pages until an empty one, every detail) at the same concurrency, made by a
 * minimal loop with Node's built-in fetch (undici) that parses each JSON body and drops it.
 * Nothing is validated, transformed or written: this is as fast as the service allows.
 */
import type { SandboxInfo } from './processes.ts';

export interface FloorInput {
  sandbox: SandboxInfo;
  concurrency: number;
  perPage: number;
}

export interface FloorResult {
  ms: number;
  requests: number;
  responses: number;
}

/** A FIFO limit on calls in flight. */
function limiter(max: number) {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (active >= max) await new Promise<void>((resolve) => waiting.push(resolve));
    active += 1;
    try {
      return await fn();
    } finally {
      active -= 1;
      waiting.shift()?.();
    }
  };
}

export async function rawFetchFloor(input: FloorInput): Promise<FloorResult> {
  const { base_url, api_key } = input.sandbox;
  const limit = limiter(input.concurrency);
  let requests = 0;
  let responses = 0;
  const getJson = (url: string) =>
    limit(async () => {
      requests += 1;
      const response = await fetch(url, { headers: { 'x-api-key': api_key } });
      if (!response.ok) throw new Error(`floor: HTTP ${response.status} from ${new URL(url).pathname}`);
      return (await response.json()) as unknown;
    });
  const api = `${base_url}/api/public`;

  const started = performance.now();
  const studies = (await getJson(`${api}/list_surveys`)) as { link_id: string }[];
  await Promise.all(
    studies.map(async (study) => {
      const link = encodeURIComponent(study.link_id);
      const details: Promise<unknown>[] = [];
      for (let page = 0; ; page++) {
        const query = `page=${page}&per_page=${input.perPage}&include_in_progress=true`;
        const items = (await getJson(`${api}/responses/${link}?${query}`)) as { id: string }[];
        if (items.length === 0) break;
        for (const item of items) {
          responses += 1;
          // Parsed, then dropped: nothing keeps the body alive.
          details.push(getJson(`${api}/responses/${link}/${encodeURIComponent(item.id)}`).then(() => {}));
        }
      }
      await Promise.all(details);
    }),
  );
  return { ms: performance.now() - started, requests, responses };
}
