/** What preparing and publishing a run's part of the current dataset work with. */
import type { Format } from '../config/schema.ts';
import type { CsvOptions } from '../output/formats/csv.ts';
import type { TableName } from '../tables/index.ts';
import type { DescriptorShard } from './descriptor.ts';
import type { CurrentListing, Partition } from './partitions.ts';
import type { PreparedPart } from './parts.ts';
import type { CurrentStaging } from './staging.ts';
import type { CurrentStore } from './store.ts';

/** The current dataset of an output: where it is and how its files are written. */
export interface CurrentOutput {
  store: CurrentStore;
  /** The pipeline's name, in current/datapackage.json. */
  name: string;
  formats: readonly Format[];
  csv: CsvOptions;
  /** Where new parts are prepared before they are copied into the store; removed by the caller. */
  scratchDir: string;
  /** The service's base_url ("sandbox" for the embedded one), named in current/datapackage.json. */
  baseUrl?: string;
  /** The run's shard: its descriptor is its own (descriptor.ts); absent, all of current/'s. */
  shard?: DescriptorShard | undefined;
  /** The pointer that names the run once committed (latest, latest-shard-K-of-N). */
  pointer?: string;
  /** The answers' Parquet bytes per slice a study's sheets are built through (wide.ts); for tests. */
  sliceBytes?: number;
}

/** What preparing and publishing one run's parts need. */
export interface CurrentContext extends CurrentOutput {
  runId: string;
  staging: CurrentStaging;
  /** One listing of current/ for the whole run, for a run of many studies (CurrentListing). */
  listing?: CurrentListing;
}

/** A study of the run: a full (since null) lossless export replaces the study's rows. */
export interface CurrentStudy {
  study_id: string;
  since: string | null;
  lossless: boolean;
  /** Responses the run fetched for the study. */
  responses?: number;
  /** Responses the service no longer lists (a reconcile): they leave the study's rows. */
  removed?: ReadonlySet<string>;
}

/** A bucket's new parts, ready in scratch, and what publishing them replaces. */
export interface PreparedBucket {
  bucket: number;
  /** The run's studies in the bucket. */
  studyIds: string[];
  parts: PreparedPart[];
  rewrite: ReadonlySet<TableName>;
  partitions: ReadonlyMap<TableName, Partition>;
  /** The wide sheets (and, with xlsx, whole workbooks) of the run's studies to write again. */
  wide: { studyId: string; part: PreparedPart }[];
}
