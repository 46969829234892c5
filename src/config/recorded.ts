/**
 * The pipeline file a run recorded in its manifest, as the PipelineConfig it was: validated by
 * src/config/schema.ts when that run read it, and written by it with no secret.
 */
import type { Manifest } from '../output/manifest.ts';
import type { PipelineConfig } from './schema.ts';

export function recordedPipeline(manifest: Manifest): PipelineConfig {
  return manifest.config as PipelineConfig;
}
