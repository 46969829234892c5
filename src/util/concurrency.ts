/**
 * Consume an async iterable with at most `limit` calls of `fn` in flight, pulling the next
 * item only when a slot is free, so memory stays bounded whatever the source's length.
 * Rejects with the first error after letting the calls in flight settle.
 */
export async function forEachBounded<T>(
  source: AsyncIterable<T>,
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  const inFlight = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  for await (const item of source) {
    const task = fn(item).then(
      () => {
        inFlight.delete(task);
      },
      (error: unknown) => {
        inFlight.delete(task);
        failure ??= { error };
      },
    );
    inFlight.add(task);
    if (inFlight.size >= limit) await Promise.race(inFlight);
    if (failure) break;
  }
  await Promise.all(inFlight);
  if (failure) throw failure.error;
}

/**
 * Runs one call at a time; of the calls waiting, the one with the lowest rank goes next
 * (first come among equals). A run ranks listing pages by study, so the first study's
 * listing completes first and its details start while later studies still list.
 */
export function rankedGate(): <T>(rank: number, fn: () => Promise<T>) => Promise<T> {
  const waiting: { rank: number; seq: number; start: () => void }[] = [];
  let busy = false;
  let seq = 0;
  const next = () => {
    waiting.sort((a, b) => a.rank - b.rank || a.seq - b.seq);
    const first = waiting.shift();
    if (first) first.start();
    else busy = false;
  };
  return async (rank, fn) => {
    if (busy) await new Promise<void>((start) => waiting.push({ rank, seq: seq++, start }));
    busy = true;
    try {
      return await fn();
    } finally {
      next();
    }
  };
}

/**
 * Promise.all that waits for every promise to settle before it rejects with the first
 * failure: nothing is aborted while a sibling is still writing.
 */
export async function allSettled<T extends readonly unknown[]>(
  promises: {
    [K in keyof T]: Promise<T[K]>;
  },
): Promise<T> {
  const results = await Promise.allSettled(promises);
  const failure = results.find((result) => result.status === 'rejected');
  if (failure) throw failure.reason;
  return results.map((result) => (result as PromiseFulfilledResult<unknown>).value) as unknown as T;
}
