/**
 * The file `init` writes, read back by the same loader as any pipeline file and by the yaml
 * library: every key of the schema is in it with its default and the schema's description
 * above it, so a key added without a description fails here.
 */
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import type { z } from 'zod';
import { parsePipelineConfig } from '../../src/config/load.ts';
import { PipelineConfig } from '../../src/config/schema.ts';
import { pipelineTemplate } from '../../src/config/template.ts';

interface Def {
  type: string;
  innerType?: z.ZodType;
  shape?: Record<string, z.ZodType>;
}
const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: Def } })._zod.def;
function shapeOf(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  let def = defOf(schema);
  while (def.innerType && def.type !== 'object') def = defOf(def.innerType);
  return def.type === 'object' ? def.shape : undefined;
}

/** Every key path of the schema with the schema of its value. */
function keys(schema: z.ZodType, prefix: string[] = []): { path: string[]; schema: z.ZodType }[] {
  return Object.entries(shapeOf(schema) ?? {}).flatMap(([key, inner]) => [
    { path: [...prefix, key], schema: inner },
    ...keys(inner, [...prefix, key]),
  ]);
}

describe('pipelineTemplate', () => {
  it('parses into exactly the defaults, and a base_url given replaces only that', () => {
    const text = pipelineTemplate({ name: 'acme' });
    expect(parsePipelineConfig(YAML.parse(text), 'acme.yaml')).toEqual(
      PipelineConfig.parse({ name: 'acme' }),
    );
    const real = pipelineTemplate({
      name: 'acme',
      values: { source: { base_url: 'https://studies.example.com' } },
    });
    expect(parsePipelineConfig(YAML.parse(real), 'acme.yaml')).toEqual(
      PipelineConfig.parse({ name: 'acme', source: { base_url: 'https://studies.example.com' } }),
    );
  });

  it('writes every key of the schema under its description, those without a default commented out', () => {
    const lines = pipelineTemplate({ name: 'acme', header: ['first', 'second'] }).split('\n');
    expect(lines.slice(0, 2)).toEqual(['# first', '# second']);
    const defaults = PipelineConfig.parse({ name: 'acme' }) as Record<string, unknown>;
    const all = keys(PipelineConfig);
    expect(all.length).toBeGreaterThan(25);
    let from = 0;
    for (const { path, schema } of all) {
      expect(schema.description, path.join('.')).toMatch(/\w/);
      const value = path.reduce<unknown>(
        (object, key) => (object as Record<string, unknown>)?.[key],
        defaults,
      );
      const indent = '  '.repeat(path.length - 1);
      const key = path.at(-1);
      // In schema order, each key once, after its comment (wrapped over one or more lines).
      const at = lines.findIndex(
        (line, index) =>
          index >= from &&
          (line === `${indent}${key}:` ||
            line.startsWith(`${indent}${key}: `) ||
            line.startsWith(`${indent}# ${key}:`)),
      );
      expect(at, path.join('.')).toBeGreaterThan(from - 1);
      const off = lines[at]!.startsWith(`${indent}# `);
      expect(off, path.join('.')).toBe(value === undefined);
      let comment = at - 1;
      const words: string[] = [];
      while (
        lines[comment]?.startsWith(`${indent}# `) &&
        !/^#?\s*\w+:( |$)/.test(lines[comment]!.slice(indent.length + 2))
      ) {
        words.unshift(lines[comment]!.slice(indent.length + 2));
        comment--;
      }
      expect(words.join(' '), path.join('.')).toBe(schema.description);
      expect(Math.max(...words.map((line) => line.length + indent.length + 2))).toBeLessThanOrEqual(96);
      from = at + 1;
    }
  });
});
