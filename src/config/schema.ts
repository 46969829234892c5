/**
 * The pipeline file (pipeline.yaml, pipelines/*.yaml), declared once. Names are the
 * product's and fixed; defaults are applied here. Objects are strict: an unknown key is an
 * error naming the file and the key path (see load.ts).
 */
import { z } from 'zod';

export const formats = ['csv', 'parquet'] as const;
export type Format = (typeof formats)[number];

export const videoModes = ['mp4', 'hls', 'both'] as const;
export type VideoMode = (typeof videoModes)[number];

const positiveInt = z.number().int().positive();

export const SourceConfig = z.strictObject({
  /** "sandbox" starts the embedded service in-process. */
  base_url: z.string().min(1).default('sandbox'),
  /** Name of the environment variable holding the key; the key itself never sits in a file. */
  api_key_env: z.string().min(1).default('STUDY_API_KEY'),
  per_page: positiveInt.default(1000),
  include_in_progress: z.boolean().default(true),
  /** API requests in flight, all studies together. */
  concurrency: positiveInt.default(8),
  timeout_ms: positiveInt.default(30_000),
  retries: z.number().int().min(0).default(5),
});

export const StudiesConfig = z.strictObject({
  /** link_id globs or permanent study ids. */
  include: z.array(z.string().min(1)).default(['*']),
  exclude: z.array(z.string().min(1)).default([]),
});

export const CsvConfig = z.strictObject({
  bom: z.boolean().default(false),
  escape_formulae: z.boolean().default(true),
});

export const OutputConfig = z.strictObject({
  dir: z.string().min(1).default('out'),
  formats: z.array(z.enum(formats)).min(1).default(['csv', 'parquet']),
  csv: CsvConfig.default({ bom: false, escape_formulae: true }),
});

export const MediaConfig = z.strictObject({
  enabled: z.boolean().default(true),
  video: z.enum(videoModes).default('mp4'),
  concurrency: positiveInt.default(4),
});

export const PipelineConfig = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'expected letters, digits, ".", "_" or "-" (it names a folder)'),
  source: SourceConfig.prefault({}),
  studies: StudiesConfig.prefault({}),
  incremental: z.boolean().default(true),
  output: OutputConfig.prefault({}),
  media: MediaConfig.prefault({}),
});
export type PipelineConfig = z.infer<typeof PipelineConfig>;
