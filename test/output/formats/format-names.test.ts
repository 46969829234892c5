/**
 * No file outside src/output/formats branches on a format's name: the registry's modules say
 * what each format is, and every other file asks them. The names come from the registry, so a
 * format added to it is covered too. A comparison with a name (===, !==, includes, case), a
 * list of names and a union of names are what this looks for; a file path or a property name
 * that happens to read 'csv' is not a branch.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { outputFormats } from '../../../src/output/formats/index.ts';

const root = join(import.meta.dirname, '..', '..', '..');
const src = join(root, 'src');
const registry = join(src, 'output', 'formats');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return path === registry ? [] : sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const names = outputFormats.map((format) => format.name);
const name = `'(?:${names.join('|')})'`;
const branches = new RegExp(
  [
    `[=!]==?\\s*${name}`,
    `${name}\\s*[=!]==?`,
    `includes\\(\\s*${name}\\s*\\)`,
    `case\\s+${name}\\s*:`,
    // A list: '[' not indexing something (PreparedBucket['wide'] is a property's type).
    `(?<![\\w$\\])])\\[\\s*(?:'[^']*'\\s*,\\s*)*${name}`,
    `${name}\\s*\\|\\s*${name}`,
  ].join('|'),
);

/** Each file's lines that branch on a format's name. */
function branchesOn(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const path of sources(src)) {
    const lines = readFileSync(path, 'utf8')
      .split('\n')
      .flatMap((line, index) => (branches.test(line) ? [`${index + 1}: ${line.trim()}`] : []));
    if (lines.length > 0) found.set(relative(root, path), lines);
  }
  return found;
}

describe('format names', () => {
  it('are compared or listed nowhere outside src/output/formats', () => {
    expect([...branchesOn()]).toEqual([]);
  });

  it('would be found in a comparison, a list and a union', () => {
    for (const line of [
      "if (format === 'parquet') {",
      "formats.includes('xlsx')",
      "const all = ['csv', 'parquet'];",
      "format: 'csv' | 'parquet'",
      "case 'dta':",
    ])
      expect(branches.test(line), line).toBe(true);
    for (const line of ["PreparedBucket['wide']", "Omit<Input, 'csv'>", "name: 'wide',"])
      expect(branches.test(line), line).toBe(false);
  });
});
