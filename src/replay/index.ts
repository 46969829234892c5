/**
 * `study-export replay RUN_DIR`: a new, complete run rebuilt from an earlier run's raw/,
 * e.g. after an upgrade that adds a column. It is `run` itself with the service replaced by
 * the recorded answers (recorded-source.ts): the same validation, rejects, keep-newest,
 * transform and writers, so no rule is restated here.
 *
 * What raw/ cannot give back: media (the signed links expired an hour after the run), so a
 * replayed run has no media.zip and its media table is empty. State is neither read nor moved.
 */
import { join, resolve } from 'node:path';
import { recordedPipeline } from '../config/recorded.ts';
import { type Format, IncrementalConfig } from '../config/schema.ts';
import { ConfigError } from '../errors.ts';
import { MANIFEST_FILE, RAW_DIR } from '../output/layout.ts';
import { readManifest } from '../output/manifest.ts';
import type { ProgressReporter } from '../pipeline/progress.ts';
import { runPipeline } from '../pipeline/run.ts';
import type { PreviousRun, RunResult } from '../pipeline/types.ts';
import { openStorage } from '../storage/index.ts';
import { openRecordedSource } from './recorded-source.ts';

export interface ReplayOptions {
  /** The run to rebuild: out/<pipeline>/runs/<run id>. */
  runDir: string;
  /** Output root for the new run (default: the one the run was written under). */
  out?: string;
  /** Table formats (default: the run's). */
  formats?: Format[];
  reporter: ProgressReporter;
  onPreviousRun?: (previous: PreviousRun) => void;
  env: NodeJS.ProcessEnv;
}

export async function replayRun(options: ReplayOptions): Promise<RunResult> {
  const manifest = await readManifest(await openStorage(options.runDir));
  if (manifest === null) {
    const path = join(options.runDir, MANIFEST_FILE);
    throw new ConfigError(
      `${path}: cannot read the manifest; is ${options.runDir} a run directory (out/<pipeline>/runs/<run id>)?`,
      { context: { file: path } },
    );
  }
  const config = recordedPipeline(manifest);
  const recorded = await openRecordedSource(join(options.runDir, RAW_DIR), config.source.base_url);
  try {
    return await runPipeline({
      config: { ...config, incremental: IncrementalConfig.parse({ enabled: false, reconcile_every: '0' }) },
      configFile: manifest.config_file,
      // The studies the run exported, by permanent id: its selection, whatever decided it.
      studies: recorded.studyIds,
      out: options.out ?? resolve(options.runDir, '..', '..', '..'),
      media: false,
      // A replay of a sample is a sample too: it never moves latest.
      ...(manifest.sample ? { limit: manifest.sample.limit } : {}),
      ...(options.formats === undefined ? {} : { formats: options.formats }),
      recorded,
      reporter: options.reporter,
      ...(options.onPreviousRun ? { onPreviousRun: options.onPreviousRun } : {}),
      env: options.env,
    });
  } finally {
    await recorded.close();
  }
}
