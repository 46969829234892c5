/** What one job holds until its entries are in the zip: temporary files and budgeted memory. */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { MemoryBudget } from './memory-budget.ts';
import type { MediaBody } from './types.ts';

export interface JobScratch {
  tempPath(): string;
  /** Records a downloaded body: release() gives its memory back or removes its file. */
  hold(body: MediaBody): void;
  release(): Promise<void>;
}

/** A failed download removes its own partial file, so only held file bodies are left to remove. */
export function jobScratch(dir: string, memory: MemoryBudget): JobScratch {
  const files: string[] = [];
  let heldBytes = 0;
  return {
    tempPath: () => join(dir, `${randomUUID()}.part`),
    hold(body) {
      if (body.kind === 'memory') heldBytes += body.data.length;
      else files.push(body.path);
    },
    async release() {
      memory.give(heldBytes);
      heldBytes = 0;
      await Promise.all(files.map((file) => rm(file, { force: true })));
    },
  };
}
