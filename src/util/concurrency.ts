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
