/** The weighted gate (weights up to a capacity, the lowest rank next, no overtaking), allSettled and nextTurn. */
import { describe, expect, it } from 'vitest';
import { allSettled, nextTurn, weightedGate } from '../../src/util/concurrency.ts';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

describe('weightedGate', () => {
  /** Calls through `gate`, recording the order they start in and the most running at once. */
  function recorder(gate: ReturnType<typeof weightedGate>) {
    const order: string[] = [];
    let running = 0;
    let most = 0;
    const call = (name: string, rank: number, weight: number, hold?: Promise<void>) =>
      gate(rank, weight, async () => {
        running += 1;
        most = Math.max(most, running);
        order.push(name);
        await (hold ?? Promise.resolve());
        running -= 1;
      });
    return { order, call, most: () => most };
  }
  const turn = () => new Promise((resolve) => setImmediate(resolve));

  it('with weights filling the capacity, runs one call at a time: the lowest rank waiting next, first come among equals', async () => {
    const { order, call, most } = recorder(weightedGate(1));
    const first = deferred();
    const calls = [
      call('first', 5, 1, first.promise),
      call('c1', 2, 1),
      call('a', 0, 1),
      call('c2', 2, 1),
      call('b', 1, 1),
    ];
    await turn();
    expect(order).toEqual(['first']);
    first.resolve();
    await Promise.all(calls);
    expect(order).toEqual(['first', 'a', 'b', 'c1', 'c2']);
    expect(most()).toBe(1);
  });

  it('runs calls side by side while their weights fit, lets none overtake the first waiting, and runs an overweight call alone', async () => {
    const { order, call, most } = recorder(weightedGate(10));
    const holdA = deferred();
    const holdB = deferred();
    const holdC = deferred();
    const calls = [
      call('a', 0, 4, holdA.promise),
      call('b', 1, 5, holdB.promise),
      call('c', 2, 3, holdC.promise), // 4 + 5 + 3 > 10: waits
      call('d', 3, 1), // would fit, but c is first in line
      call('big', 4, 50),
    ];
    await turn();
    expect(order).toEqual(['a', 'b']);
    holdA.resolve();
    await turn();
    expect(order).toEqual(['a', 'b', 'c', 'd']); // 5 + 3 + 1 fit once a is done
    holdB.resolve();
    await turn();
    expect(order).toEqual(['a', 'b', 'c', 'd']); // big waits until nothing runs
    holdC.resolve();
    await Promise.all(calls);
    expect(order).toEqual(['a', 'b', 'c', 'd', 'big']);
    expect(most()).toBe(3);
  });

  it('goes on after a call fails, and passes the failure to its caller', async () => {
    const gate = weightedGate(1);
    const failed = gate(0, 1, async () => {
      throw new Error('page failed');
    });
    const next = gate(1, 1, async () => 'next ran');
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

describe('nextTurn', () => {
  it('gives callers waiting at once a loop iteration each, so I/O can run between them', async () => {
    const order: string[] = [];
    // Each continuation leaves something for the loop's next iteration: it runs before the
    // next caller's turn only if that turn is a later iteration.
    const waiters = ['first', 'second', 'third'].map((name) =>
      nextTurn().then(() => {
        order.push(name);
        setImmediate(() => order.push(`after ${name}`));
      }),
    );
    await Promise.all(waiters);
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['first', 'after first', 'second', 'after second', 'third', 'after third']);
  });
});
