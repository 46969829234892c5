import { describe, expect, it } from 'vitest';
import { MemoryBudget } from '../../src/media/memory-budget.ts';

describe('MemoryBudget', () => {
  it('takes what fits, refuses a file over the per-file cap or beyond what is free, never waits', () => {
    const budget = new MemoryBudget(10, 6);
    expect(budget.tryTake(7)).toBe(false); // over the per-file cap
    expect(budget.tryTake(6)).toBe(true);
    expect(budget.tryTake(5)).toBe(false); // only 4 free
    expect(budget.tryTake(4)).toBe(true);
    expect(budget.freeBytes).toBe(0);
    expect(budget.tryTake(0)).toBe(true); // an empty body costs nothing
    budget.give(6);
    expect(budget.freeBytes).toBe(6);
    expect(budget.tryTake(5)).toBe(true);
  });

  it('never holds more than its total, even if given back more than was taken', () => {
    const budget = new MemoryBudget(10, 10);
    budget.give(5);
    expect(budget.freeBytes).toBe(10);
    expect(budget.tryTake(11)).toBe(false);
  });
});
