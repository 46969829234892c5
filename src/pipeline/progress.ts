/**
 * What the pipeline tells the person or CI log watching it. The CLI chooses the
 * implementation (live bars on a TTY, plain periodic lines otherwise, JSON lines with
 * --log-format json); the pipeline only calls these methods.
 */
import type { RetryInfo } from '../api/client.ts';
import type { SchemaChange } from '../drift/schema.ts';
import type { StudyOutcome } from '../output/manifest.ts';
import type { Warning } from '../records.ts';

export type Stage = 'studies' | 'pages' | 'details' | 'media';

/** One API request about to be tried again (the client's own account of it). */
export type RetryEvent = RetryInfo;

export interface ProgressReporter {
  /** A stage starts; total is known for studies and estimated (from desc) for details. */
  start(stage: Stage, total?: number): void;
  /** `count` more items done; for media, `bytes` more bytes downloaded. */
  tick(stage: Stage, count?: number, bytes?: number): void;
  warn(warning: Warning): void;
  retry(event: RetryEvent): void;
  /** A study's export begins (its listing, then its details). */
  studyStarted?(studyId: string): void;
  /** A study is exported (or failed): what the manifest will say of it. */
  studyDone(outcome: StudyOutcome): void;
  /** A change of a study's schema since the last committed run (src/drift/). */
  schemaChange?(change: SchemaChange): void;
  stop(): void;
}

/** A reporter that says nothing, for tests and library use. */
export const silentReporter: ProgressReporter = {
  start() {},
  tick() {},
  warn() {},
  retry() {},
  studyDone() {},
  stop() {},
};
