/**
 * README.md is the front door: read in five minutes, in a terminal. The topic pages it links
 * to stay terminal-wide too, and every link between them leads somewhere.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const maxLines = 200;
const maxWidth = 100;

/** Pages written for a terminal (tables.md is generated from the declarations). */
const topicPages = [
  'configuration.md',
  'outputs.md',
  'incremental.md',
  'current.md',
  'object-storage.md',
  'scheduling.md',
  'media.md',
  'security.md',
  'troubleshooting.md',
  'performance.md',
  'sandbox.md',
  'development.md',
].map((name) => path.join('docs', name));

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
    for (const code of ['0', '1', '2', '3', '130, 143']) expect(codes).toContain(`\n| ${code} |`);
  });
});

describe('docs/', () => {
  it('topic pages have no line wider than a terminal', async () => {
    for (const page of topicPages) expect(wideLines(await text(page)), page).toEqual([]);
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
