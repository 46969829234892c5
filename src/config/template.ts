/**
 * A pipeline file written from the schema (`study-export init`): every key with its
 * default, each under a comment that is the schema's own description of it, so the file
 * and the rules that read it cannot disagree. Keys without a default are written commented
 * out, to be filled in when needed.
 */
import YAML from 'yaml';
import type { z } from 'zod';
import { PipelineConfig } from './schema.ts';

type AnySchema = z.ZodType;

interface SchemaDef {
  type: string;
  innerType?: AnySchema;
  /** A pipe's (a preprocessed key's) schema of the value it gives. */
  out?: AnySchema;
  shape?: Record<string, AnySchema>;
}

const defOf = (schema: AnySchema) => (schema as unknown as { _zod: { def: SchemaDef } })._zod.def;

/** The object schema inside default/prefault/optional wrappers, or undefined for any other. */
function objectShape(schema: AnySchema): Record<string, AnySchema> | undefined {
  let def = defOf(schema);
  for (let inner = def.innerType ?? def.out; inner && def.type !== 'object'; inner = def.innerType ?? def.out)
    def = defOf(inner);
  return def.type === 'object' ? def.shape : undefined;
}

export interface TemplateOptions {
  name: string;
  /** Keys set to something other than their default, e.g. { source: { base_url } }. */
  values?: { source?: { base_url?: string } };
  /** The first lines of the file, each made a comment. */
  header?: string[];
}

/** The pipeline file's text; it parses (loadPipeline) into the schema's defaults plus `values`. */
export function pipelineTemplate(options: TemplateOptions): string {
  const config = PipelineConfig.parse({ name: options.name, ...options.values });
  const lines = (options.header ?? []).map((line) => (line === '' ? '#' : `# ${line}`));
  if (lines.length > 0) lines.push('');
  writeKeys(lines, objectShape(PipelineConfig) ?? {}, config, '', false);
  return `${lines.join('\n')}\n`;
}

function writeKeys(
  lines: string[],
  shape: Record<string, AnySchema>,
  values: Record<string, unknown> | undefined,
  indent: string,
  commented: boolean,
): void {
  for (const [key, schema] of Object.entries(shape)) {
    // A section left out is written commented out, with its example when the schema has one.
    const value = values?.[key] ?? (commented || values === undefined ? undefined : exampleOf(schema));
    const off = commented || values?.[key] === undefined;
    const prefix = off ? `${indent}# ` : indent;
    // Top-level sections apart, like a hand-written file.
    if (indent === '' && lines.length > 0 && lines.at(-1) !== '') lines.push('');
    for (const line of wrap(schema.description ?? '', WIDTH - indent.length - 2))
      lines.push(`${indent}# ${line}`);
    const inner = objectShape(schema);
    if (inner) {
      lines.push(`${prefix}${key}:`);
      writeKeys(lines, inner, value as Record<string, unknown> | undefined, `${indent}  `, off);
    } else {
      lines.push(`${prefix}${key}:${value === undefined ? '' : ` ${scalar(value)}`}`);
    }
  }
}

const WIDTH = 96;

/** The example a schema's metadata gives (`.meta({ example })`), if any. */
function exampleOf(schema: AnySchema): Record<string, unknown> | undefined {
  const example = (schema.meta() as { example?: unknown } | undefined)?.example;
  return example !== null && typeof example === 'object' ? (example as Record<string, unknown>) : undefined;
}

/** Words into lines of at most `width` characters (a longer word keeps its own line). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= width)
      lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines;
}

/** A value on one line: a flow list for arrays, YAML's own quoting for strings. */
function scalar(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(scalar).join(', ')}]`;
  if (value !== null && typeof value === 'object')
    return `{ ${Object.entries(value)
      .map(([key, item]) => `${scalar(key)}: ${scalar(item)}`)
      .join(', ')} }`;
  return YAML.stringify(value, { lineWidth: 0 }).trimEnd();
}
