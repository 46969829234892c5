/** What a run is asked to do and what it reports back (the command line's view of a run). */
import type { ApiClient } from '../api/client.ts';
import type { Format, PipelineConfig } from '../config/schema.ts';
import type { FormatsFilled } from '../current/index.ts';
import type { SchemaChange } from '../drift/schema.ts';
import type { Sample } from '../output/guide/sample.ts';
import type { PreviousRun } from '../publish/run-dir.ts';
import type { Warning } from '../records.ts';
import type { ProgressReporter } from './progress.ts';

export type { PreviousRun };

import type { Shard } from '../shard.ts';

/**
 * The command line's overrides, each winning over the pipeline file. Declared here once:
 * the `run` command's options are keyed by these names (src/cli/commands/run.ts).
 */
export interface RunOverrides {
  /** output.dir */
  out?: string;
  /** Exact ids or link_ids; replaces studies.include and exclude. */
  studies?: string[];
  /** updated_since for every study instead of its watermark. */
  since?: string;
  /** Ignore the watermarks. */
  full?: boolean;
  /** output.formats */
  formats?: Format[];
  /** media.enabled */
  media?: boolean;
  /** source.concurrency */
  concurrency?: number;
  /** Print the plan; write nothing. */
  dryRun?: boolean;
  /** One state file (state.json's format) instead of the state kept beside the runs. */
  stateFile?: string;
  /** source.base_url may differ from the service the output was written from (source-record.ts). */
  acceptNewSource?: boolean;
  /** A sample: at most this many responses per study, moving nothing else (sample.ts). */
  limit?: number;
  /** Take what the service no longer lists out of current/ (reconcile.ts), due or not. */
  reconcile?: boolean;
  /** A reconcile past incremental.reconcile_max_fraction goes through; implies reconcile. */
  acceptDeletions?: boolean;
  /** Commit a run whose studies' schemas changed although schema.on_change is fail (schema-drift.ts). */
  acceptSchemaChange?: boolean;
}

export interface RunOptions extends RunOverrides {
  config: PipelineConfig;
  /** The pipeline file the config came from, for messages and the manifest. */
  configFile: string;
  /** Only the studies of this shard (by a stable hash of the permanent id); from --shard or the environment. */
  shard?: Shard;
  /**
   * Answers an earlier run recorded (replay) instead of the service. Such a run neither reads
   * nor moves the state: it has not seen the service, so no watermark may advance.
   */
  recorded?: { client: ApiClient };
  /** How old what a killed run left on object storage must be before it is removed. */
  leftoverGraceMs?: number;
  /**
   * Told, as soon as it is read, which run `latest` names before this run (null: none yet),
   * so that an interrupt can say what the output still holds.
   */
  onPreviousRun?: (previous: PreviousRun) => void;
  reporter: ProgressReporter;
  env: NodeJS.ProcessEnv;
}

export interface TableSummary {
  table: string;
  rows: number;
}

export interface DryRunPlan {
  base_url: string;
  studies: {
    study_id: string;
    link_id: string;
    title: string;
    /** From the study's desc: all its responses. */
    expected_responses: number | null;
    since: string | null;
    /**
     * With a watermark (since): the responses listed as changed since then, what the run
     * would export now; null for a full export (see expected_responses) or a failed listing.
     */
    changed: number | null;
  }[];
  media: boolean;
  formats: Format[];
  out: string;
  /** The shard this run would take, e.g. { index: 2, count: 3 }; null when not sharded. */
  shard: Shard | null;
  /** --limit: at most this many responses per study would be exported, as a sample. */
  sample: Sample | null;
}

/** An incremental run that found nothing new: no run was written (see nothing-new.ts). */
export interface NothingNew {
  /** The newest run the checked studies' state records: nothing is new since that run. */
  sinceRun: string;
  /** The pointer (`latest`, or `latest-shard-K-of-N`) and the run it still names (null: none here). */
  pointer: string;
  latest: string | null;
  /** Studies listed (incrementally) and found unchanged. */
  studies: number;
  /** API requests the run made, every attempt counted. */
  requests: number;
  /** Formats added since current/ was written, filled in from current/ itself (added-formats.ts). */
  filled?: FormatsFilled;
}

export interface RunResult {
  /**
   * complete: exit 0; partial: exit 3 (rejects or failed media, all listed in the manifest);
   * unchanged: exit 0, nothing new, so no run was written and latest did not move.
   */
  status: 'complete' | 'partial' | 'planned' | 'unchanged';
  runDir: string | null;
  tables: TableSummary[];
  files: { path: string; bytes: number }[];
  warnings: number;
  rejects: number;
  mediaFailed: number;
  durationMs: number;
  plan?: DryRunPlan;
  /** Set when status is unchanged. */
  unchanged?: NothingNew;
  /** Formats added since current/ was written, filled in for what the run did not touch. */
  filled?: FormatsFilled;
  /** Set for a sample run (--limit): state, current/ and latest were left as they were. */
  sample?: Sample;
  /** Set when the run reconciled: studies listed whole, responses taken out of current/, studies held back. */
  reconciled?: { studies: number; removed: number; heldBack: number };
  /** What changed on the service since the last committed run, per study (src/drift/). */
  schemaChanges?: SchemaChange[];
  /**
   * The run is committed, but part of its publication failed (current/, the state): each
   * message says what and where ("run <id> committed, but …"). Exit 3; the next run completes it.
   */
  unfinished?: string[];
}

/** Warnings go to the manifest and, as they happen, to the person watching. */
export interface WarningLog {
  warnings: Warning[];
  warn(warning: Warning): void;
}
