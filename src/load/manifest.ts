/**
 * manifest.json: what a run did and what it wrote. Every file of the run is listed with
 * its bytes and sha256 so `study-export verify` can re-check it later. Nothing secret goes
 * in: the config carries the name of the key's environment variable, never the key.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PipelineConfig } from '../config/schema.ts';
import type { SchemaChange } from '../drift/schema.ts';
import { ConfigError, RunError } from '../errors.ts';
import type { Warning } from '../records.ts';
import { redact } from '../redact.ts';
import type { Storage, StoredFile } from '../storage/types.ts';
import type { Sample } from './sample.ts';

export const MANIFEST_FILE = 'manifest.json';

/** A file of the run with its size and sha256, as counted while it was written. */
export type ManifestFile = StoredFile;

export interface StudyOutcome {
  study_id: string;
  link_id: string;
  /** updated_since used for this study; null for a full export. */
  since: string | null;
  responses: number;
  rejects: number;
  media_failed: number;
  /** True when nothing was lost: the study's watermark may advance. */
  lossless: boolean;
  error: string | null;
}

export interface Manifest {
  tool: { name: string; version: string };
  run_id: string;
  pipeline: string;
  config_file: string;
  status: 'complete' | 'partial';
  started_at: string;
  finished_at: string;
  timings_ms: Record<string, number>;
  config: PipelineConfig;
  studies: StudyOutcome[];
  tables: Record<string, number>;
  files: ManifestFile[];
  requests: unknown;
  media: unknown;
  warnings: Warning[];
  rejects: { count: number; file: string };
  /** What changed on the service since the last committed run, per study (src/drift/). */
  schema_changes?: SchemaChange[];
  /**
   * Present (true) when schema.on_change is fail and the run was committed with its changes
   * because it was given --accept-schema-change.
   */
  schema_changes_accepted?: true;
  /** Present for a sample run (run --limit): not the whole export, and nothing else moved. */
  sample?: Sample;
}

/** Written last: on object storage, a run without its manifest is not a run. */
export async function writeManifest(run: Storage, manifest: Manifest): Promise<void> {
  await run.put(MANIFEST_FILE, `${JSON.stringify(manifest, null, 2)}\n`);
}

/** The config as it may be recorded: a base_url never keeps user:password or a query. */
export function publicConfig(config: PipelineConfig): PipelineConfig {
  return { ...config, source: { ...config.source, base_url: redact(config.source.base_url) } };
}

/** A run's manifest; a missing or unreadable one says the folder is not a run. */
export async function readManifest(runDir: string): Promise<Manifest> {
  const path = join(runDir, MANIFEST_FILE);
  try {
    return JSON.parse(await readFile(path, 'utf8')) as Manifest;
  } catch (cause) {
    // No manifest at all: the command line named something that is not a run (exit 2).
    const Failure = (cause as NodeJS.ErrnoException).code === 'ENOENT' ? ConfigError : RunError;
    throw new Failure(
      `${path}: cannot read the manifest; is ${runDir} a run directory (out/<pipeline>/runs/<run id>)?`,
      {
        context: { file: path },
        cause,
      },
    );
  }
}
