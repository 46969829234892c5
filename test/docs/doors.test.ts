/**
 * A room with a door is entered only through it: no file of src/, test/, bench/ or scripts/
 * outside src/current imports a file of src/current other than its index.ts (and likewise
 * src/reader). Import lines are read as text, static and dynamic alike.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const doors = ['src/current/index.ts', 'src/reader/index.ts'];

async function sourceFiles(): Promise<string[]> {
  const files: string[] = [];
  for (const folder of ['src', 'test', 'bench', 'scripts']) {
    const entries = await readdir(path.join(root, folder), { recursive: true }).catch(() => []);
    for (const entry of entries)
      if (/\.(ts|js|mjs)$/.test(entry)) files.push(path.posix.join(folder, entry.split(path.sep).join('/')));
  }
  return files.sort();
}

/** The repository paths `file` imports by relative specifier (from '…', import('…')). */
function importedPaths(file: string, text: string): string[] {
  const specifiers = [
    ...text.matchAll(/\bfrom\s+'(\.{1,2}\/[^']+)'/g),
    ...text.matchAll(/\bimport\s*\(\s*'(\.{1,2}\/[^']+)'\s*\)/g),
    ...text.matchAll(/^\s*import\s+'(\.{1,2}\/[^']+)'/gm),
  ].map((match) => match[1] as string);
  return specifiers.map((specifier) =>
    path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)),
  );
}

/** Each import of `file` that reaches past a door: "file -> target". */
function pastDoors(file: string, imported: readonly string[]): string[] {
  const crossings: string[] = [];
  for (const door of doors) {
    const room = `${path.posix.dirname(door)}/`;
    if (file.startsWith(room)) continue;
    for (const target of imported)
      if (target.startsWith(room) && target !== door) crossings.push(`${file} -> ${target}`);
  }
  return crossings;
}

describe('doors', () => {
  it('the rule names an import past a door, and lets the door and the room itself through', () => {
    // Written in parts, so that this file's own text holds no such import.
    const up = '../../src';
    const imported = importedPaths(
      'test/current/x.test.ts',
      [
        `import { a } from '${up}/current/parts.ts';`,
        `import type { B } from '${up}/current/index.ts';`,
        `export { c } from '${up}/reader/run.ts';`,
        `const d = await import('${up}/current/wide.ts');`,
      ].join('\n'),
    );
    expect(pastDoors('test/current/x.test.ts', imported).sort()).toEqual([
      'test/current/x.test.ts -> src/current/parts.ts',
      'test/current/x.test.ts -> src/current/wide.ts',
      'test/current/x.test.ts -> src/reader/run.ts',
    ]);
    expect(pastDoors('src/current/bucket.ts', ['src/current/parts.ts'])).toEqual([]);
  });

  it('no file outside src/current or src/reader imports past its index.ts', async () => {
    const files = await sourceFiles();
    expect(files).toContain('test/docs/doors.test.ts');
    const crossings: string[] = [];
    for (const file of files)
      crossings.push(...pastDoors(file, importedPaths(file, await readFile(path.join(root, file), 'utf8'))));
    expect(crossings).toEqual([]);
  });
});
