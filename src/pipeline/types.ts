/** What a run is asked to do and what it reports back (the command line's view of a run). */
import type { Format, PipelineConfig } from '../config/schema.ts';
import type { ProgressReporter } from './progress.ts';
import type { Shard } from './shard.ts';

export interface RunOptions {
  config: PipelineConfig;
  /** The pipeline file the config came from, for messages and the manifest. */
  configFile: string;
  /** Command-line overrides; each wins over the pipeline file. */
  out?: string;
  studies?: string[];
  since?: string;
  full?: boolean;
  formats?: Format[];
  media?: boolean;
  concurrency?: number;
  dryRun?: boolean;
  stateFile?: string;
  /** Only the studies of this shard (by a stable hash of the permanent id). */
  shard?: Shard;
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
    expected_responses: number | null;
    since: string | null;
  }[];
  media: boolean;
  formats: Format[];
  out: string;
  /** The shard this run would take, e.g. { index: 2, count: 3 }; null when not sharded. */
  shard: Shard | null;
}

export interface RunResult {
  /** complete: exit 0; partial: exit 3 (rejects or failed media, all listed in the manifest). */
  status: 'complete' | 'partial' | 'planned';
  runDir: string | null;
  tables: TableSummary[];
  files: { path: string; bytes: number }[];
  warnings: number;
  rejects: number;
  mediaFailed: number;
  durationMs: number;
  plan?: DryRunPlan;
}
