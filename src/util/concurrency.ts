/** The turn last handed out: each waits for the one before. */
let lastTurn: Promise<void> = Promise.resolve();

/**
 * Resolves after the event loop has taken the I/O that is ready (answers, which start the next
 * requests): awaited before a long piece of synchronous work, so that it does not hold up the
 * requests in flight. Callers waiting at once get a loop iteration each: immediates queued
 * together all run in one check phase, so a study's end, encoding every table's block, would
 * otherwise run them back to back with no I/O between.
 */
export function nextTurn(): Promise<void> {
  const turn = lastTurn.then(() => new Promise<void>((resolve) => setImmediate(resolve)));
  lastTurn = turn;
  return turn;
}

/**
 * Consume an iterable (async or not) with at most `limit` calls of `fn` in flight, pulling the
 * next item only when a slot is free, so memory stays bounded whatever the source's length.
 * Rejects with the first error after letting the calls in flight settle.
 */
export async function forEachBounded<T>(
  source: AsyncIterable<T> | Iterable<T>,
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
 * Admits calls while the weights of those running add up to at most `capacity` (a call with
 * nothing else running is admitted whatever its weight); of the calls waiting, the lowest
 * rank goes next (first come among equals) and none overtakes it. A run weighs listing pages
 * by the responses they are expected to hold and ranks them by study, so the first study's
 * listing completes first and its details start while later studies still list.
 */
export function weightedGate(
  capacity: number,
): <T>(rank: number, weight: number, fn: () => Promise<T>) => Promise<T> {
  const waiting: { rank: number; seq: number; weight: number; start: () => void }[] = [];
  let runningWeight = 0;
  let running = 0;
  let seq = 0;
  const admit = () => {
    waiting.sort((a, b) => a.rank - b.rank || a.seq - b.seq);
    for (let first = waiting[0]; first !== undefined; first = waiting[0]) {
      if (running > 0 && runningWeight + first.weight > capacity) return;
      waiting.shift();
      runningWeight += first.weight;
      running += 1;
      first.start();
    }
  };
  return async (rank, weight, fn) => {
    await new Promise<void>((start) => {
      waiting.push({ rank, seq: seq++, weight, start });
      admit();
    });
    try {
      return await fn();
    } finally {
      runningWeight -= weight;
      running -= 1;
      admit();
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
