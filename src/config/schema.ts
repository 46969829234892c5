/**
 * The pipeline file (pipeline.yaml, pipelines/*.yaml), declared once. Names are the
 * product's and fixed; defaults are applied here. Objects are strict: an unknown key is an
 * error naming the file and the key path (see load.ts). Each key's `.describe()` text is
 * what people read about it: `study-export init` writes it as the key's comment (template.ts).
 */
import { z } from 'zod';
import { type VideoMode, videoModes } from '../media/types.ts';
import {
  defaultFormats,
  type Format,
  formatNames,
  isTableFormat,
  studyFormats,
  type TableFormat,
  tableFormats,
} from '../output/formats/index.ts';
import { durationPattern, durationRule } from './duration.ts';

export const formats = formatNames;
export { type Format, isTableFormat, type TableFormat };

const tableNames = tableFormats.map((format) => format.name);
const perStudy = studyFormats.filter((format) => format.selectable);
export const tableFormatMissing = `expected ${tableNames.join(' or ')} beside ${perStudy.map((f) => f.name).join(', ')}, e.g. [csv, xlsx] (the tables are written in ${tableNames.join(' or ')}; ${perStudy.map((f) => `${f.name} adds ${f.help}`).join(', ')})`;
/** What --formats takes, said once for every command that has it (and checked by parseFormats). */
export const formatsRule = `${tableNames.join(' and/or ')}, plus ${perStudy.map((f) => `${f.name} for ${f.help}`).join(', ')} beside them; comma-separated, e.g. csv,xlsx`;

export { type VideoMode, videoModes };

/**
 * The range of every numeric setting, declared once: the pipeline file's schema and the
 * command-line flags that override a setting both read it, so the two can never disagree.
 */
export const settingBounds = {
  per_page: { min: 1, max: 10_000 },
  concurrency: { min: 1, max: 256 },
  // Beyond about 24.8 days Node's timers overflow; an hour of silence is already a hang.
  timeout_ms: { min: 100, max: 3_600_000 },
  retries: { min: 0, max: 20 },
  max_pages: { min: 1, max: 10_000_000 },
  max_retry_after_s: { min: 0, max: 3_600 },
  // A whole request may take a few idle timeouts, never long enough to overflow a timer.
  deadline_ms: { min: 100, max: 14_400_000 },
  max_body_mib: { min: 1, max: 4_096 },
  media_concurrency: { min: 1, max: 64 },
  media_deadline_ms: { min: 1_000, max: 14_400_000 },
  max_file_mib: { min: 1, max: 65_536 },
} as const;

/** The deadline of a whole API request when `source.deadline_ms` is not set: a few idle timeouts. */
export function apiDeadlineMs(source: { timeout_ms: number; deadline_ms?: number | undefined }): number {
  return source.deadline_ms ?? Math.min(settingBounds.deadline_ms.max, 4 * source.timeout_ms);
}

const boundedInt = (bounds: { min: number; max: number }) => z.number().int().min(bounds.min).max(bounds.max);

/** "sandbox", or an absolute http(s) URL with a host (a typo is caught before any request). */
function isBaseUrl(value: string): boolean {
  if (value === 'sandbox') return true;
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

export const SourceConfig = z.strictObject({
  base_url: z
    .string()
    .min(1)
    .refine(isBaseUrl, 'expected "sandbox" or an http:// or https:// URL')
    // The client adds /api/public/... itself: with it here every request would 404.
    .refine(
      (url) => !/\/api\/public\/?$/i.test(url),
      "expected the service's root URL without /api/public (the tool adds it to every request)",
    )
    .default('sandbox')
    .describe(
      'the service\'s URL, e.g. https://studies.example.com; "sandbox" starts the embedded reference service (no key, no network). An output folder keeps one service: a run against another stops (exit 2) unless given --accept-new-source',
    ),
  api_key_env: z
    .string()
    .min(1)
    .default('STUDY_API_KEY')
    .describe('the environment variable holding the API key (the key itself never sits in a file)'),
  per_page: boundedInt(settingBounds.per_page)
    .default(1000)
    .describe('responses per list page (the service may cap it lower)'),
  include_in_progress: z
    .boolean()
    .default(true)
    .describe('include responses whose analysis is still running'),
  concurrency: boundedInt(settingBounds.concurrency)
    .default(8)
    .describe('API requests in flight, all studies together'),
  timeout_ms: boundedInt(settingBounds.timeout_ms)
    .default(30_000)
    .describe('connect, idle socket and first byte, per request'),
  retries: boundedInt(settingBounds.retries)
    .default(5)
    .describe('per request, on network errors, 408, 429 and 5xx'),
  max_pages: boundedInt(settingBounds.max_pages)
    .default(100_000)
    .describe(
      "a study's listing stops here (warning, watermark held, exit 3) when its desc declares no response count; with a count, the bound follows from it",
    ),
  max_retry_after_s: boundedInt(settingBounds.max_retry_after_s)
    .default(60)
    .describe('longest Retry-After waited for (API and media); a longer one waits this long and is counted'),
  deadline_ms: boundedInt(settingBounds.deadline_ms)
    .optional()
    .describe(
      'a whole request, first byte sent to last received (timeout_ms bounds only silences); default 4 x timeout_ms',
    ),
  max_body_mib: boundedInt(settingBounds.max_body_mib)
    .default(64)
    .describe('largest API answer read; a longer one is cut off as it arrives'),
});

export const StudiesConfig = z.strictObject({
  include: z
    .array(z.string().min(1))
    .default(['*'])
    .describe('link_id globs (* and ?) or permanent study ids'),
  exclude: z.array(z.string().min(1)).default([]).describe('the same, left out'),
});

export const CsvConfig = z.strictObject({
  bom: z.boolean().default(false).describe('a byte order mark on the wide sheets, for old Excel'),
  escape_formulae: z
    .boolean()
    .default(true)
    .describe('cells starting with =, +, - or @ made inert for spreadsheets'),
});

export const S3Config = z.strictObject({
  endpoint: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe("the server's URL, e.g. http://minio:9000"),
  force_path_style: z
    .boolean()
    .optional()
    .describe('bucket in the path rather than the host name; the default when an endpoint is set'),
});

export const OutputConfig = z.strictObject({
  dir: z
    .string()
    .min(1)
    .refine((dir) => !/^s3:/i.test(dir) || /^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/.*)?$/.test(dir), {
      message:
        'expected a folder or s3://bucket/prefix (a bucket name: lower-case letters, digits, "." and "-")',
    })
    .default('out')
    .describe('runs land in DIR/<name>/; a folder, or s3://bucket/prefix for S3-compatible object storage'),
  formats: z
    .array(z.enum(formats))
    .min(1)
    .refine((list) => list.some(isTableFormat), tableFormatMissing)
    .default(() => [...defaultFormats])
    .describe(
      `${tableNames.join(' and/or ')}; add ${perStudy.map((f) => `${f.name} for ${f.help}`).join(', ')} beside them`,
    ),
  csv: CsvConfig.default({ bom: false, escape_formulae: true }).describe('how CSV files are written'),
  s3: S3Config.optional().describe(
    'for S3-compatible servers (MinIO, R2, Ceph); credentials come only from the AWS environment and profiles',
  ),
});

export const MediaConfig = z.strictObject({
  enabled: z.boolean().default(true).describe('archive audio and video into media.zip'),
  video: z.enum(videoModes).default('mp4').describe('mp4, hls or both'),
  concurrency: boundedInt(settingBounds.media_concurrency)
    .default(4)
    .describe('downloads in flight, apart from API requests'),
  deadline_ms: boundedInt(settingBounds.media_deadline_ms)
    .default(3_600_000)
    .describe('a whole download of one file (a signed link lives an hour)'),
  max_file_mib: boundedInt(settingBounds.max_file_mib)
    .default(4_096)
    .describe('largest file downloaded (and never more than its Content-Length)'),
});

export const ArchiveConfig = z.strictObject({
  source_organization: z
    .string()
    .min(1)
    .optional()
    .describe("bag-info.txt's Source-Organization: the organisation the bags come from"),
  contact_name: z.string().min(1).optional().describe("bag-info.txt's Contact-Name: who answers for them"),
  contact_email: z.string().min(1).optional().describe("bag-info.txt's Contact-Email"),
});

export const IncrementalConfig = z.strictObject({
  enabled: z
    .boolean()
    .default(true)
    .describe(
      'export only responses updated since the last run (a watermark per study); false: all, every run',
    ),
  reconcile_every: z
    .string()
    .regex(durationPattern, durationRule)
    .default('7d')
    .describe(
      'how often a scheduled run also lists each study whole and takes the responses the service no longer lists out of current/ (7d, 12h, 30m; 0: only with run --reconcile)',
    ),
  reconcile_max_fraction: z
    .number()
    .min(0)
    .max(1)
    .default(0.2)
    .describe(
      "a reconcile that would take more than this share of a study's responses out of current/ takes none, and the run exits 3, until a run with --accept-deletions",
    ),
});

/** The built-in detectors of personal data in respondents' text (src/privacy/detect.ts). */
export const privacyDetectors = ['email', 'phone', 'url', 'ip'] as const;
export type PrivacyDetector = (typeof privacyDetectors)[number];
export const attributeRules = ['keep', 'drop', 'pseudonymise'] as const;
export type AttributeRule = (typeof attributeRules)[number];

export const PrivacyTextConfig = z.strictObject({
  detect: z
    .array(z.enum(privacyDetectors))
    .default([...privacyDetectors])
    .describe(
      'built-in detectors: email, phone (international and common national forms), url, ip; each match becomes a tag such as [EMAIL-3]',
    ),
  terms: z
    .string()
    .min(1)
    .optional()
    .describe(
      'a UTF-8 file of names, places and employers, one a line (relative to this file); matched case-insensitively on word boundaries, each becomes [NAME-n]',
    ),
  patterns: z
    .array(z.string().min(1))
    .default([])
    .describe(
      'extra regular expressions (JavaScript syntax, matched case-sensitively); each match becomes [PATTERN-n]',
    ),
});

export const PrivacyConfig = z.strictObject({
  key_env: z
    .string()
    .min(1)
    .default('STUDY_PSEUDONYM_KEY')
    .describe(
      'the environment variable holding the pseudonym secret (never written anywhere, like the API key)',
    ),
  ids: z
    .enum(['pseudonymise', 'keep'])
    .default('pseudonymise')
    .describe('response ids in a package: pseudonymise or keep; file names built from ids follow'),
  attributes: z
    .record(z.string().min(1), z.enum(attributeRules))
    .default({})
    .describe(
      'per URL-parameter key (globs * and ?): keep, drop or pseudonymise; keys not named are dropped, e.g. { "utm_*": keep, id: pseudonymise }',
    ),
  text: PrivacyTextConfig.prefault({}).describe(
    "what is replaced in respondents' text (answers, turns, summaries)",
  ),
  recordings: z
    .enum(['exclude', 'keep'])
    .default('exclude')
    .describe(
      'exclude (voices and faces are not de-identified by text rules) or keep (the package says they identify people)',
    ),
});
export type PrivacyConfig = z.infer<typeof PrivacyConfig>;

export const schemaChangeRules = ['warn', 'fail'] as const;

export const SchemaConfig = z.strictObject({
  on_change: z
    .enum(schemaChangeRules)
    .default('warn')
    .describe(
      "what a change of a study's schema on the service does (a question added, gone or reworded, a concept, a URL parameter, a field the spec does not name, a JSON type): warn reports it and commits; fail commits nothing and exits 4 naming every change, until a run is given --accept-schema-change",
    ),
});

export const pipelineNamePattern = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
export const pipelineNameRule = 'expected letters, digits, ".", "_" or "-" (it names a folder)';

export const PipelineConfig = z.strictObject({
  name: z
    .string()
    .regex(pipelineNamePattern, pipelineNameRule)
    .describe('names the output folder: <output.dir>/<name>/'),
  source: SourceConfig.prefault({}).describe('the service exported'),
  studies: StudiesConfig.prefault({}).describe('which studies'),
  incremental: z
    .preprocess(
      // `incremental: true|false` is short for `incremental: { enabled: true|false }`.
      (value) => (typeof value === 'boolean' ? { enabled: value } : value),
      IncrementalConfig.prefault({}),
    )
    .describe(
      'export only what changed since the last run, and now and then take what the service no longer lists out of current/ (true or false alone sets enabled)',
    ),
  output: OutputConfig.prefault({}).describe('where and in which formats'),
  media: MediaConfig.prefault({}).describe('audio and video recordings'),
  schema: SchemaConfig.prefault({}).describe(
    "changes on the service between the last committed run and this one, per study (reported in the run's summary, manifest, report and codebook)",
  ),
  archive: ArchiveConfig.optional().describe(
    '`study-export archive`: who deposits its BagIt bags (each also a command-line option)',
  ),
  privacy: PrivacyConfig.optional().meta({
    description:
      'the privacy profile share, archive and qdpx apply to every package they hand off, unless --identified (docs/privacy.md)',
    // What `init` writes, commented out, as a starting point.
    example: {
      key_env: 'STUDY_PSEUDONYM_KEY',
      ids: 'pseudonymise',
      attributes: { 'utm_*': 'keep', id: 'pseudonymise' },
      text: { detect: [...privacyDetectors], terms: 'privacy/terms.txt', patterns: [] },
      recordings: 'exclude',
    },
  }),
});
export type PipelineConfig = z.infer<typeof PipelineConfig>;
