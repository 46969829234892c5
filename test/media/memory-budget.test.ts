import { describe, expect, it } from 'vitest';
import { MemoryBudget } from '../../src/media/memory-budget.ts';

describe('MemoryBudget', () => {
  it('takes what fits, refuses a file over the per-file cap or beyond what is free, never waits', () => {
    const budget = new MemoryBudget(10, 6, 1);
    expect(budget.take(7)).toBeNull(); // over the per-file cap
    const six = budget.take(6);
    expect(six).toHaveLength(6);
    expect(budget.take(5)).toBeNull(); // only 4 free
    expect(budget.take(4)).toHaveLength(4);
    expect(budget.freeBytes).toBe(0);
    expect(budget.take(0)).toHaveLength(0); // an empty body costs nothing
    budget.give(six as Buffer);
    expect(budget.freeBytes).toBe(6);
    expect(budget.take(5)).toHaveLength(5);
  });

  it('hands a buffer given back to the next body that fits in it, and allocates only when none does', () => {
    const budget = new MemoryBudget(200, 50, 10);
    const first = budget.take(25) as Buffer; // a 30-byte buffer (steps of 10)
    first.fill(1);
    budget.give(first);
    const second = budget.take(28) as Buffer;
    expect(second.buffer).toBe(first.buffer);
    expect(second).toHaveLength(28);
    expect(budget.take(35)).toHaveLength(35); // nothing idle holds 35 bytes: a new buffer
    expect(budget.allocations).toBe(2);
    budget.give(second);
    // The smallest idle buffer that holds the body is used.
    const big = budget.take(45) as Buffer;
    budget.give(big);
    expect((budget.take(20) as Buffer).buffer).toBe(second.buffer);
    expect(budget.allocations).toBe(3);
  });

  it('never holds more than its total: idle buffers are dropped to make room for a larger body', () => {
    const budget = new MemoryBudget(100, 100, 10);
    const a = budget.take(40) as Buffer;
    const b = budget.take(40) as Buffer;
    budget.give(a);
    budget.give(b);
    // 80 bytes idle, none holds 90: both are dropped and 90 allocated, within the total.
    expect(budget.take(90)).toHaveLength(90);
    expect(budget.allocations).toBe(3);
    expect(budget.freeBytes).toBe(10);
    expect(budget.take(20)).toBeNull();
  });

  it('ignores a buffer it did not hand out, or one given back twice', () => {
    const budget = new MemoryBudget(10, 10, 1);
    budget.give(Buffer.alloc(5));
    expect(budget.freeBytes).toBe(10);
    const taken = budget.take(10) as Buffer;
    budget.give(taken);
    budget.give(taken);
    expect(budget.freeBytes).toBe(10);
    expect(budget.take(10)).not.toBeNull();
    expect(budget.take(1)).toBeNull();
  });
});
