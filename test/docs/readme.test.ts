/**
 * README.md is the front door: read in five minutes, in a terminal. The topic pages it links
 * to stay terminal-wide too, and every link between them leads somewhere.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPipeline } from '../../src/config/load.ts';

const root = path.resolve(import.meta.dirname, '../..');
const maxLines = 200;
const maxWidth = 100;

/** Every docs page is read in a terminal too (tables.md is generated to fit). */
async function docsPages(): Promise<string[]> {
  const names = await readdir(path.join(root, 'docs'));
  return names.filter((name) => name.endsWith('.md')).map((name) => path.join('docs', name));
}

async function text(file: string): Promise<string> {
  return readFile(path.join(root, file), 'utf8');
}

function wideLines(content: string): string[] {
  return content
    .split('\n')
    .map((line, index) => `${index + 1}: ${line}`)
    .filter((numbered) => [...numbered.replace(/^\d+: /, '')].length > maxWidth);
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

describe('README.md', () => {
  it(`is at most ${maxLines} lines, none wider than ${maxWidth} characters`, async () => {
    const readme = await text('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(maxLines);
    expect(wideLines(readme)).toEqual([]);
  });

  it('gives install, the two commands, a real service, what lands on disk and the exit codes', async () => {
    const readme = await text('README.md');
    for (const heading of ['Install', 'Try it', 'Pointing it at a real service', 'What lands on disk']) {
      expect(readme).toContain(`\n## ${heading}\n`);
    }
    expect(readme).toContain('    npm ci && npm start\n');
    expect(readme).toContain('    npm ci && npm test\n');
    expect(readme).toMatch(/several minutes/);
    expect(readme).toMatch(/\/api\/public/);
    const codes = readme.split('\n## Exit codes\n')[1]?.split('\n## ')[0] ?? '';
    for (const code of ['0', '1', '2', '3', '4', '75', '130, 143'])
      expect(codes).toContain(`\n- **${code}**: `);
  });
});

describe('docs/', () => {
  it('no page has a line wider than a terminal', async () => {
    for (const page of await docsPages()) expect(wideLines(await text(page)), page).toEqual([]);
  });

  it('every relative link of README.md and docs/*.md leads to a file and heading that exist', async () => {
    const pages = ['README.md', ...(await readdir(path.join(root, 'docs'))).map((name) => `docs/${name}`)];
    for (const page of pages.filter((name) => name.endsWith('.md'))) {
      const content = await text(page);
      for (const [, target] of content.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (target === undefined || /^[a-z]+:/.test(target)) continue;
        const [file, anchor] = target.split('#');
        const resolved = file ? path.join(path.dirname(path.join(root, page)), file) : path.join(root, page);
        expect(existsSync(resolved), `${page} links to ${target}`).toBe(true);
        if (anchor && resolved.endsWith('.md')) {
          const headings = (await readFile(resolved, 'utf8')).match(/^#+ .*$/gm) ?? [];
          const anchors = headings.map((heading) => anchorOf(heading.replace(/^#+ /, '')));
          expect(anchors, `${page} links to ${target}`).toContain(anchor);
        }
      }
    }
  });
});

describe('docs/configuration.md', () => {
  it('shows the pipeline file with every default the schema has', async () => {
    const page = await text('docs/configuration.md');
    const section = page.split('\n## The pipeline file\n')[1] ?? '';
    const block = /\n((?: {4}.*\n)+)/.exec(section)?.[1] ?? '';
    const yaml = block.replace(/^ {4}/gm, '');
    const dir = await mkdtemp(path.join(tmpdir(), 'study-export-docs-'));
    try {
      await writeFile(path.join(dir, 'shown.yaml'), yaml);
      await writeFile(path.join(dir, 'bare.yaml'), 'name: demo\n');
      const shown = await loadPipeline({ config: 'shown.yaml', cwd: dir, env: {} });
      const defaults = await loadPipeline({ config: 'bare.yaml', cwd: dir, env: {} });
      expect(shown.config).toEqual(defaults.config);
      // Every key the schema fills in is written out (deadline_ms as the comment it is).
      for (const key of Object.keys(defaults.config.source)) {
        expect(yaml, `source.${key}`).toMatch(new RegExp(`^ {2}#? ?${key}:`, 'm'));
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
