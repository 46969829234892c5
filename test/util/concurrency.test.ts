/** The ranked gate (one call at a time, the lowest rank next) and allSettled. */
import { describe, expect, it } from 'vitest';
import { allSettled, rankedGate } from '../../src/util/concurrency.ts';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

describe('rankedGate', () => {
  it('runs one call at a time and lets the lowest rank waiting go next, first come among equals', async () => {
    const gate = rankedGate();
    const order: string[] = [];
    let running = 0;
    let most = 0;
    const first = deferred();
    const call = (name: string, rank: number, hold?: Promise<void>) =>
      gate(rank, async () => {
        running += 1;
        most = Math.max(most, running);
        order.push(name);
        await (hold ?? Promise.resolve());
        running -= 1;
      });
    const calls = [call('first', 5, first.promise), call('c1', 2), call('a', 0), call('c2', 2), call('b', 1)];
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['first']);
    first.resolve();
    await Promise.all(calls);
    expect(order).toEqual(['first', 'a', 'b', 'c1', 'c2']);
    expect(most).toBe(1);
  });

  it('goes on after a call fails, and passes the failure to its caller', async () => {
    const gate = rankedGate();
    const failed = gate(0, async () => {
      throw new Error('page failed');
    });
    const next = gate(1, async () => 'next ran');
    await expect(failed).rejects.toThrow('page failed');
    await expect(next).resolves.toBe('next ran');
  });
});

describe('allSettled', () => {
  it('gives every value in order', async () => {
    await expect(allSettled([Promise.resolve(1), Promise.resolve('two')])).resolves.toEqual([1, 'two']);
  });

  it('rejects with the first failure only once every sibling has settled', async () => {
    const slow = deferred();
    let slowDone = false;
    const sibling = slow.promise.then(() => {
      slowDone = true;
    });
    const all = allSettled([Promise.reject(new Error('close failed')), sibling]);
    let settled = false;
    all.catch(() => {
      settled = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    slow.resolve();
    await expect(all).rejects.toThrow('close failed');
    expect(slowDone).toBe(true);
  });
});
