/**
 * A run's README.md (codebook) and report.html: written from the table declarations and the
 * rows of the run, listed in the manifest, and safe against the service's text.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyRun } from '../../../src/load/verify.ts';
import { codebookMarkdown, markdownText } from '../../../src/output/guide/codebook.ts';
import { reportHtml } from '../../../src/output/guide/report-html.ts';
import { RunStats } from '../../../src/output/guide/run-stats.ts';
import { type Sandbox, startSandbox } from '../../../src/sandbox/index.ts';
import { tableNames, tables, wideSheet } from '../../../src/tables/index.ts';
import { withTempDir } from '../../helpers/environment.ts';
import { readManifest, runAgainst, sandboxConfig } from '../../helpers/run.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 32, studies: 3, responses: 4 });
});
afterAll(async () => {
  await sandbox.close();
});

describe('README.md and report.html in a run', () => {
  it('name every table, key and column, every study, and pass verify', async () => {
    await withTempDir(async (out) => {
      const { runDir } = await runAgainst(sandbox, sandboxConfig(sandbox, out, { media: { enabled: true } }));
      const readme = await readFile(join(runDir!, 'README.md'), 'utf8');
      for (const name of tableNames) {
        expect(readme).toContain(`### ${name}`);
        expect(readme).toContain(`Key: ${tables[name].primaryKey.map((k) => `\`${k}\``).join(', ')}.`);
        for (const column of tables[name].columns) expect(readme).toContain(`| ${column.name} |`);
      }
      // The wide sheets' columns, from their declaration: status, modality, attributes.
      expect(readme).toContain('### wide sheets');
      for (const column of wideSheet.fixed) expect(readme).toContain(`- \`${column.header}\` (`);
      expect(readme).toContain(`- \`${wideSheet.attributePrefix}<key>\` (string)`);
      const report = await readFile(join(runDir!, 'report.html'), 'utf8');
      for (const study of sandbox.studies()) {
        expect(readme).toContain(`\`${study.id}\``);
        expect(report).toContain(`Study id ${study.id}.`);
      }
      expect(readme).toContain('Export: full');
      // Nothing to fetch: no script, no stylesheet or font link, no remote source.
      expect(report).not.toMatch(/<script|<link|@import|(src|href)="?https?:|url\("?https?:/);
      const manifest = await readManifest(runDir!);
      const listed = manifest.files.map((f) => f.path);
      expect(listed).toContain('README.md');
      expect(listed).toContain('report.html');
      const verified = await verifyRun(runDir!);
      expect(verified.problems).toEqual([]);
    });
  });
});

describe('report.html of a partial run', () => {
  it('says in plain words what was rejected and why', async () => {
    const study = sandbox.studies()[1]!;
    const bad = sandbox.responses(study.link_id)[0]!;
    sandbox.mutateDetail(study.link_id, bad.id, (detail) => ({ ...detail, transcript: 'nope' }));
    try {
      await withTempDir(async (out) => {
        const result = await runAgainst(sandbox, sandboxConfig(sandbox, out));
        expect(result.rejects).toBe(1);
        const report = await readFile(join(result.runDir!, 'report.html'), 'utf8');
        const reject = JSON.parse((await readFile(join(result.runDir!, 'rejects.jsonl'), 'utf8')).trim()) as {
          reason: string;
        };
        expect(report).toContain('<h3>1 rejected record</h3>');
        expect(report).toContain(`<li>1 × ${reject.reason.replace(/"/g, '&quot;')}</li>`);
        expect(report).toContain('partial: something was lost or rejected');
        const readme = await readFile(join(result.runDir!, 'README.md'), 'utf8');
        expect(readme).toContain('- Status: partial');
      });
    } finally {
      sandbox.mutateDetail(study.link_id, bad.id, (detail) => detail);
    }
  });
});

describe('text from the service', () => {
  it('is escaped in the codebook and the report', () => {
    const hostile = '<img src=x onerror=alert(1)> | **bold** [link](javascript:alert(1))\n# heading';
    expect(markdownText(hostile)).toBe(
      '&lt;img src=x onerror=alert(1)&gt; \\| \\*\\*bold\\*\\* \\[link\\](javascript:alert(1)) # heading',
    );
    const stats = new RunStats();
    const study = { study_id: 's1', link_id: 'l<b>', title: hostile };
    stats.add('studies', [
      {
        ...study,
        created_at: '2026-01-01T00:00:00.000Z',
        desc: '',
        listed_response_count: null,
        extra: null,
      },
    ]);
    const common = {
      kind: 'run' as const,
      pipeline: 'p',
      service: 'sandbox',
      runId: 'r',
      startedAt: 'a',
      finishedAt: 'b',
    };
    const html = reportHtml({
      ...common,
      studies: [study],
      stats,
      warnings: [{ code: 'x', message: '<script>alert(2)</script>' }],
      mediaEnabled: false,
    });
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<script');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    const readme = codebookMarkdown({
      ...common,
      studies: [{ ...study, responses: 0, since: null }],
      formats: ['csv'],
      files: [],
    });
    expect(readme).not.toContain('<img');
    expect(readme).not.toContain('<b>');
  });
});
