/**
 * What the pipeline tells the person or CI log watching it. The CLI chooses the
 * implementation (live bars on a TTY, plain periodic lines otherwise); the pipeline only
 * calls these methods.
 */
import type { Warning } from '../records.ts';

export type Stage = 'studies' | 'pages' | 'details' | 'media';

export interface ProgressReporter {
  /** A stage starts; total is known for studies and estimated (from desc) for details. */
  start(stage: Stage, total?: number): void;
  /** `count` more items done; for media, `bytes` more bytes downloaded. */
  tick(stage: Stage, count?: number, bytes?: number): void;
  setTotal(stage: Stage, total: number): void;
  info(message: string): void;
  warn(warning: Warning): void;
  stop(): void;
}

/** A reporter that says nothing, for tests and library use. */
export const silentReporter: ProgressReporter = {
  start() {},
  tick() {},
  setTotal() {},
  info() {},
  warn() {},
  stop() {},
};
