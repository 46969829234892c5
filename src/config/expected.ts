/**
 * "What was expected" at a key path, read off the zod schema itself so the message and the
 * rule can never disagree.
 */
import type { z } from 'zod';
import type { KeyPath } from './paths.ts';

type AnySchema = z.ZodType;

interface SchemaDef {
  type: string;
  innerType?: AnySchema;
  /** A pipe's (a preprocessed key's) schema of the value it gives. */
  out?: AnySchema;
  element?: AnySchema;
  valueType?: AnySchema;
  shape?: Record<string, AnySchema>;
  entries?: Record<string, string>;
}

function defOf(schema: AnySchema): SchemaDef {
  return (schema as unknown as { _zod: { def: SchemaDef } })._zod.def;
}

const wrappers = new Set(['default', 'prefault', 'optional', 'nullable', 'readonly']);

function unwrap(schema: AnySchema, { pipes = true } = {}): AnySchema {
  let current = schema;
  for (let def = defOf(current); ; def = defOf(current)) {
    if (wrappers.has(def.type) && def.innerType) current = def.innerType;
    else if (pipes && def.type === 'pipe' && def.out) current = def.out;
    else break;
  }
  return current;
}

/** The schema that governs the value at `path`, or undefined past the end of the schema. */
export function schemaAt(root: AnySchema, path: KeyPath): AnySchema | undefined {
  let current: AnySchema | undefined = unwrap(root);
  for (const segment of path) {
    if (!current) return undefined;
    const def = defOf(unwrap(current));
    const next: AnySchema | undefined =
      def.type === 'object'
        ? def.shape?.[String(segment)]
        : def.type === 'array'
          ? def.element
          : def.type === 'record'
            ? def.valueType
            : undefined;
    // Not through a pipe: what it accepts before its schema is what the message says.
    current = next ? unwrap(next, { pipes: false }) : undefined;
  }
  return current;
}

/** The keys an object schema allows, for "unknown key" messages. */
export function allowedKeys(schema: AnySchema | undefined): string[] {
  if (!schema) return [];
  const def = defOf(unwrap(schema));
  return def.type === 'object' && def.shape ? Object.keys(def.shape) : [];
}

export function describeExpected(schema: AnySchema | undefined): string {
  if (!schema) return 'a known key';
  const inner = unwrap(schema);
  const def = defOf(inner);
  switch (def.type) {
    case 'number':
      return describeNumber(inner);
    case 'string':
      return inner.safeParse('').success ? 'a string' : 'a non-empty string';
    case 'boolean':
      return 'true or false';
    case 'enum':
      return `one of: ${Object.values(def.entries ?? {}).join(', ')}`;
    case 'array':
      return `a list of ${plural(describeExpected(def.element))}`;
    case 'object': {
      const mapping = `a mapping with keys: ${allowedKeys(inner).join(', ')}`;
      // A section with a shorthand (incremental: true) takes a boolean too.
      return schema.safeParse(true).success ? `true or false, or ${mapping}` : mapping;
    }
    case 'record':
      return `a mapping of keys to ${plural(describeExpected(def.valueType))}`;
    default:
      return `a ${def.type}`;
  }
}

// Probing is simpler and safer than reading zod's internal check list.
function describeNumber(schema: AnySchema): string {
  const integer = !schema.safeParse(0.5).success;
  const noun = integer ? 'integer' : 'number';
  const { minValue, maxValue } = schema as unknown as { minValue: number | null; maxValue: number | null };
  const article = integer ? 'an' : 'a';
  if (isBound(minValue) && isBound(maxValue)) return `${article} ${noun} from ${minValue} to ${maxValue}`;
  if (!schema.safeParse(0).success && schema.safeParse(1).success) return `a positive ${noun}`;
  if (schema.safeParse(0).success && !schema.safeParse(-1).success) return `an ${noun} of 0 or more`;
  return `${article} ${noun}`;
}

/** A declared bound, not zod's implicit safe-integer range. */
function isBound(value: number | null): value is number {
  return value !== null && Math.abs(value) < Number.MAX_SAFE_INTEGER;
}

function plural(description: string): string {
  if (description.startsWith('one of: ')) return `values, each ${description}`;
  return description.replace(/^an? (non-empty )?(\w+)/, (_m, adjective: string | undefined, noun: string) => {
    return `${adjective ?? ''}${noun}s`;
  });
}
