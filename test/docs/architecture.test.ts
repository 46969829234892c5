/**
 * docs/architecture.md's list of files (its section "Files") is the tree: every file under
 * src/ is listed in its folder, and nothing listed is absent; and every src/ path and file
 * name its prose names exists. A failure names the files to add to the list or to take out of it.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

/** Every file under src/, as a path from the repository's root. */
async function sourceTree(): Promise<string[]> {
  const entries = await readdir(path.join(root, 'src'), { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
    .sort();
}

/**
 * The files the section lists: its indented lines, each a folder (ending in "/") and the
 * names of the files in it, or more names of the folder above.
 */
function listedFiles(markdown: string): string[] {
  const section = markdown.split('\n## Files\n')[1]?.split('\n## ')[0];
  if (section === undefined) throw new Error('docs/architecture.md has no section "## Files"');
  const files: string[] = [];
  let folder: string | null = null;
  for (const line of section.split('\n').filter((text) => text.startsWith('    '))) {
    for (const word of line.trim().split(/\s+/)) {
      if (word.endsWith('/')) folder = word;
      else if (folder === null) throw new Error(`"${word}" is listed before any folder`);
      else files.push(`${folder}${word}`);
    }
  }
  return files.sort();
}

/** The src/ paths the page names outside its list of files. */
function namedPaths(markdown: string): string[] {
  const prose = markdown.replace(/\n## Files\n[\s\S]*?(?=\n## |$)/, '\n');
  return [...new Set(prose.match(/\bsrc\/[\w./-]*[\w-]/g) ?? [])].sort();
}

describe('docs/architecture.md', () => {
  it('reads the list of files folder by folder, continuation lines included', () => {
    const markdown = [
      '# x',
      '',
      '## Files',
      '',
      '    src/          a.ts b.ts',
      '                  c.ts',
      '    src/api/      d.ts',
      '',
      '## Next',
      '    src/not/      listed.ts',
    ].join('\n');
    expect(listedFiles(markdown)).toEqual(['src/a.ts', 'src/api/d.ts', 'src/b.ts', 'src/c.ts']);
  });

  it('lists every file under src/, and no file that is not there', async () => {
    const markdown = await readFile(path.join(root, 'docs/architecture.md'), 'utf8');
    const tree = await sourceTree();
    const listed = listedFiles(markdown);
    expect(tree.length).toBeGreaterThan(100);
    const missing = tree.filter((file) => !listed.includes(file));
    const absent = listed.filter((file) => !tree.includes(file));
    expect({ missing, absent }, 'missing: add to "## Files"; absent: take out of it').toEqual({
      missing: [],
      absent: [],
    });
  });

  it('names only src/ files and folders that exist', async () => {
    const markdown = await readFile(path.join(root, 'docs/architecture.md'), 'utf8');
    const tree = await sourceTree();
    const named = namedPaths(markdown);
    expect(named.length).toBeGreaterThan(20);
    const exists = (named: string) => tree.some((file) => file === named || file.startsWith(`${named}/`));
    expect(named.filter((name) => !exists(name))).toEqual([]);
    // A file named alone (`csv.ts`) is one of the tree's.
    const names = new Set(tree.map((file) => path.posix.basename(file)));
    const alone = [...markdown.matchAll(/`([\w.-]+\.ts)`/g)].map((match) => match[1] as string);
    expect(alone.length).toBeGreaterThan(50);
    expect([...new Set(alone.filter((name) => !names.has(name)))]).toEqual([]);
  });
});
