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
  const buffers: Buffer[] = [];
  return {
    tempPath: () => join(dir, `${randomUUID()}.part`),
    hold(body) {
      if (body.kind === 'memory') buffers.push(body.data);
      else files.push(body.path);
    },
    async release() {
      for (const buffer of buffers.splice(0)) memory.give(buffer);
      await Promise.all(files.map((file) => rm(file, { force: true })));
    },
  };
}
