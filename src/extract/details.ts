/**
 * The single-response call (spec 4.3) for every listed response of a study.
 *
 * At most `window` calls of this study are in flight and no more than that is pulled from the
 * listing (backpressure); the client's shared limit bounds all studies together. Results come
 * out in completion order. One response that fails (404, retries exhausted on 5xx, resets or
 * a refused connection, not JSON) or does not validate goes to rejects with detail null and
 * the run goes on; only a refused key ends it.
 */
import type { ApiClient } from '../api/client.ts';
import {
  checked,
  describeIssues,
  type ListedResponse,
  SingleResponse,
  type Study,
} from '../api/resources.ts';
import { HttpError, NetworkError, PayloadError } from '../errors.ts';
import { archiveRaw, type ExtractSinks, rejectRecord } from '../records.ts';
import { storable, tooDeepReason } from './nesting.ts';

export interface DetailResult {
  listed: ListedResponse;
  detail: SingleResponse | null;
  /** Date.now() when the detail arrived: its signed media URLs expire an hour after issue. */
  fetchedAt: number;
}

export interface FetchDetailsOptions {
  /** Detail calls of this study in flight at once. */
  window: number;
}

type Settled = { ok: true; value: DetailResult } | { ok: false; error: unknown };

export async function* fetchDetails(
  client: ApiClient,
  study: Study,
  listed: AsyncIterable<ListedResponse>,
  sinks: ExtractSinks,
  options: FetchDetailsOptions,
): AsyncGenerator<DetailResult> {
  const window = Math.max(1, options.window);
  const source = listed[Symbol.asyncIterator]();
  const inFlight = new Map<number, Promise<{ key: number; settled: Settled }>>();
  let nextKey = 0;
  let exhausted = false;
  let finished = false;
  try {
    for (;;) {
      while (!exhausted && inFlight.size < window) {
        await sinks.raw.drained?.();
        const next = await source.next();
        if (next.done) {
          exhausted = true;
          break;
        }
        const key = nextKey++;
        inFlight.set(
          key,
          settle(fetchOne(client, study, next.value, sinks)).then((settled) => ({ key, settled })),
        );
      }
      if (inFlight.size === 0) break;
      const { key, settled } = await Promise.race(inFlight.values());
      inFlight.delete(key);
      if (!settled.ok) throw settled.error;
      yield settled.value;
    }
    finished = true;
  } finally {
    if (!finished) {
      // Stopped early (consumer break or a fatal error): close the listing, let calls settle.
      await source.return?.();
      await Promise.allSettled(inFlight.values());
    }
  }
}

async function settle(promise: Promise<DetailResult>): Promise<Settled> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}

async function fetchOne(
  client: ApiClient,
  study: Study,
  listed: ListedResponse,
  sinks: ExtractSinks,
): Promise<DetailResult> {
  let fetched: Awaited<ReturnType<ApiClient['getResponse']>>;
  try {
    fetched = await client.getResponse(study.link_id, listed.id);
  } catch (error) {
    // One response lost is a reject (its study's watermark holds); a refused key is the run's end.
    const lost = error instanceof HttpError || error instanceof PayloadError || error instanceof NetworkError;
    if (!lost) throw error;
    rejectDetail(sinks, study, listed.id, `${error.code}: ${error.message}`, null);
    return { listed, detail: null, fetchedAt: Date.now() };
  }
  const fetchedAt = Date.now();
  const payload = storable(fetched.payload);
  archiveRaw(
    sinks.raw,
    'get_response',
    { ...fetched, payload },
    {
      link_id: study.link_id,
      study_id: study.id,
      response_id: listed.id,
    },
  );
  if (payload !== fetched.payload) {
    rejectDetail(sinks, study, listed.id, tooDeepReason, payload);
    return { listed, detail: null, fetchedAt };
  }
  const parsed = checked(SingleResponse, fetched.payload);
  if (!parsed.success) {
    rejectDetail(sinks, study, listed.id, describeIssues(parsed.error), fetched.payload);
    return { listed, detail: null, fetchedAt };
  }
  if (parsed.data.id !== listed.id) {
    const reason = `id: expected "${listed.id}" (the id asked for), got "${parsed.data.id}"`;
    rejectDetail(sinks, study, listed.id, reason, fetched.payload);
    return { listed, detail: null, fetchedAt };
  }
  return { listed, detail: parsed.data, fetchedAt };
}

function rejectDetail(
  sinks: ExtractSinks,
  study: Study,
  responseId: string,
  reason: string,
  raw: unknown,
): void {
  sinks.rejects.write(
    rejectRecord('get_response', reason, raw, {
      study_id: study.id,
      link_id: study.link_id,
      response_id: responseId,
    }),
  );
}
