/**
 * Finding, reading, interpolating and validating a pipeline file. Every problem is a
 * ConfigError whose message names the file, the key path, what was expected and what was
 * found, e.g. `pipelines/x.yaml: source.per_page: expected an integer from 1 to 10000, found "ten"`.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import YAML from 'yaml';
import type { z } from 'zod';
import { ConfigError } from '../errors.ts';
import { closestName } from '../util/closest.ts';
import { allowedKeys, describeExpected, schemaAt } from './expected.ts';
import { InterpolationError, interpolate } from './interpolate.ts';
import { describeFound, formatPath, valueAt } from './paths.ts';
import { PipelineConfig } from './schema.ts';
import { LineCounter, placeYamlError, unresolvedAlias } from './yaml-error.ts';

export interface LoadPipelineOptions {
  /** --config FILE */
  config?: string;
  /** --pipeline NAME, meaning pipelines/NAME.yaml */
  pipeline?: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
}

export interface LoadedPipeline {
  config: PipelineConfig;
  /** The file as the user sees it: relative to cwd when inside it. */
  file: string;
}

export const DEFAULT_PIPELINE_FILE = 'pipeline.yaml';
export const PIPELINES_DIR = 'pipelines';

export async function loadPipeline(options: LoadPipelineOptions): Promise<LoadedPipeline> {
  const absolute = await resolvePipelineFile(options);
  const file = displayPath(absolute, options.cwd);
  const text = await readPipelineText(absolute, file, options.config === undefined);
  const parsed = parseYaml(text, file);
  const interpolated = interpolateValues(parsed, options.env, file);
  return { config: validate(interpolated, file), file };
}

/** Validates an already parsed value (tests, library use); `file` names it in messages. */
export function parsePipelineConfig(
  value: unknown,
  file: string,
  env: NodeJS.ProcessEnv = {},
): PipelineConfig {
  return validate(interpolateValues(value, env, file), file);
}

/**
 * The API key for the source. The embedded sandbox needs none (undefined); any other
 * base_url needs the environment variable named by source.api_key_env.
 */
export function resolveApiKey(
  config: PipelineConfig,
  env: NodeJS.ProcessEnv,
  file: string,
): string | undefined {
  if (config.source.base_url === 'sandbox') return undefined;
  const name = config.source.api_key_env;
  const key = env[name];
  if (key === undefined || key.trim() === '') {
    throw new ConfigError(
      `${file}: source.api_key_env: environment variable ${name} is not set: pipeline "${config.name}" reads its API key from it for ${config.source.base_url}`,
      { context: { operation: 'api key', file } },
    );
  }
  return key;
}

async function resolvePipelineFile(options: LoadPipelineOptions): Promise<string> {
  if (options.config !== undefined && options.pipeline !== undefined) {
    throw new ConfigError('give either --config FILE or --pipeline NAME, not both');
  }
  if (options.config !== undefined) return path.resolve(options.cwd, options.config);
  if (options.pipeline !== undefined) {
    const name = options.pipeline;
    if (name === '' || name.includes('/') || name.includes('\\') || name.startsWith('.')) {
      throw new ConfigError(
        `--pipeline takes a name from ${PIPELINES_DIR}/ (e.g. "demo"), found "${name}"; use --config FILE for a path`,
      );
    }
    const file = path.resolve(options.cwd, PIPELINES_DIR, `${name.replace(/\.ya?ml$/, '')}.yaml`);
    await assertPipelineExists(file, name, options.cwd);
    return file;
  }
  return path.resolve(options.cwd, DEFAULT_PIPELINE_FILE);
}

async function assertPipelineExists(file: string, name: string, cwd: string): Promise<void> {
  try {
    await readFile(file);
  } catch {
    const available = await listPipelines(cwd);
    const list = available.length > 0 ? available.join(', ') : 'none';
    const meant = closestName(name, available);
    const next =
      meant === undefined ? `\`study-export init ${name}\` writes one` : `did you mean --pipeline ${meant}?`;
    throw new ConfigError(
      `no pipeline named "${name}": ${displayPath(file, cwd)} not found (available: ${list}); ${next}`,
      { context: { file: displayPath(file, cwd) } },
    );
  }
}

/** Names of pipelines/*.yaml, for messages and help. */
export async function listPipelines(cwd: string): Promise<string[]> {
  try {
    const entries = await readdir(path.resolve(cwd, PIPELINES_DIR));
    return entries
      .filter((entry) => entry.endsWith('.yaml'))
      .map((entry) => entry.slice(0, -'.yaml'.length))
      .sort();
  } catch {
    return [];
  }
}

/** The file's text; a missing default file points to `init`, which writes one. */
async function readPipelineText(absolute: string, file: string, isDefault: boolean): Promise<string> {
  try {
    return await readFile(absolute, 'utf8');
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    const reason = missing ? 'no such file' : String(error);
    const next =
      missing && isDefault
        ? `; \`study-export init\` writes one (\`study-export init NAME\` writes ${PIPELINES_DIR}/NAME.yaml)`
        : '';
    throw new ConfigError(`${file}: cannot read the pipeline file (${reason})${next}`, {
      context: { file },
      cause: error,
    });
  }
}

function parseYaml(text: string, file: string): unknown {
  const lineCounter = new LineCounter();
  const document = YAML.parseDocument(text, { prettyErrors: true, lineCounter });
  const error = placeYamlError(document, text, lineCounter);
  if (error) {
    throw new ConfigError(`${file}: line ${error.line}, column ${error.col}: invalid YAML: ${error.reason}`, {
      context: { file },
    });
  }
  try {
    return document.toJS();
  } catch (cause) {
    // An alias to an anchor never set (*name) is found only when the document is read.
    const alias = unresolvedAlias(document, lineCounter);
    const where = alias ? `line ${alias.line}, column ${alias.col}: ` : '';
    throw new ConfigError(`${file}: ${where}invalid YAML: ${(cause as Error).message}`, {
      context: { file },
      cause,
    });
  }
}

function interpolateValues(value: unknown, env: NodeJS.ProcessEnv, file: string): unknown {
  try {
    return interpolate(value, env);
  } catch (error) {
    if (error instanceof InterpolationError) {
      throw new ConfigError(`${file}: ${formatPath(error.path)}: ${error.message}`, { context: { file } });
    }
    throw error;
  }
}

function validate(value: unknown, file: string): PipelineConfig {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigError(
      `${file}: expected ${describeExpected(PipelineConfig)}, found ${describeFound(value ?? undefined)}`,
      { context: { file } },
    );
  }
  const result = PipelineConfig.safeParse(value);
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => `${file}: ${describeIssue(issue, value)}`);
  throw new ConfigError(lines.join('\n'), { context: { file } });
}

function describeIssue(issue: z.core.$ZodIssue, root: unknown): string {
  const where = issue.path.length > 0 ? `${formatPath(issue.path)}: ` : '';
  if (issue.code === 'unrecognized_keys') {
    const allowed = allowedKeys(schemaAt(PipelineConfig, issue.path));
    const keys = issue.keys.map((key) => `"${key}"`).join(', ');
    const meant = issue.keys.flatMap((key) => closestName(key, allowed) ?? []);
    const guess = meant.length > 0 ? `did you mean ${meant.join(', ')}? ` : '';
    return `${where}unknown key${issue.keys.length > 1 ? 's' : ''} ${keys} (${guess}expected one of: ${allowed.join(', ')})`;
  }
  const found = describeFound(valueAt(root, issue.path));
  if (issue.code === 'invalid_value') {
    // One of a list (a format, a detector, a rule): the near miss named, as for keys.
    const typed = valueAt(root, issue.path);
    const meant = typeof typed === 'string' ? closestName(typed, issue.values.map(String)) : undefined;
    if (meant !== undefined)
      return `${where}did you mean ${meant}? expected ${describeExpected(schemaAt(PipelineConfig, issue.path))}, found ${found}`;
  }
  // The schema's own message when it wrote one for people (e.g. the name pattern).
  const expected =
    (issue.code === 'invalid_format' || issue.code === 'custom') && issue.message.startsWith('expected ')
      ? issue.message.slice('expected '.length)
      : describeExpected(schemaAt(PipelineConfig, issue.path));
  return `${where}expected ${expected}, found ${found}`;
}

function displayPath(absolute: string, cwd: string): string {
  const relative = path.relative(cwd, absolute);
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : absolute;
}
