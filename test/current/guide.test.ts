/**
 * current/README.md and current/report.html: a run takes the figures of the buckets new to
 * current/ from its own rows and counts the others' newest parts; either way the files say
 * what counting every partition's newest part says.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import type { PipelineConfig } from '../../src/config/schema.ts';
import { countCurrent, partitionName, writeCurrentGuide } from '../../src/current/index.ts';
import { RunStats } from '../../src/output/guide/run-stats.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { openStorage } from '../../src/storage/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeEach(async () => {
  sandbox = await startSandbox({ seed: 41, studies: 5, responses: 4 });
});
afterEach(async () => {
  await sandbox.close();
});

const GUIDE_FILES = ['README.md', 'report.html'] as const;

/** The guide's files with their times (when they were written) left out. */
async function guideFiles(current: string): Promise<string[]> {
  return Promise.all(
    GUIDE_FILES.map(async (name) =>
      (await readFile(join(current, name), 'utf8')).replace(
        /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g,
        '<time>',
      ),
    ),
  );
}

/** The run's guide is the one written from every partition's newest part, counted now. */
async function expectAsCounted(out: string, config: PipelineConfig, runDir: string): Promise<void> {
  const current = join(out, 'test', 'current');
  const written = await guideFiles(current);
  const runId = runDir.split(/[/\\]/).at(-1) as string;
  await writeCurrentGuide(await openStorage(join(out, 'test')), config, runId);
  expect(written).toEqual(await guideFiles(current));
}

describe('the guide to current/', () => {
  it('says what every newest part holds, after a first run and after an incremental one with a new study', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, {
        output: { formats: ['csv', 'parquet'] },
        media: { enabled: true },
      });
      // One recording fails: the report lists why.
      sandbox.overrideNext({ listener: 'storage' }, { status: 404, body: 'Not Found' }, 1);
      const first = await runAgainst(sandbox, config);
      expect(first.mediaFailed).toBeGreaterThan(0);
      await expectAsCounted(out, config, first.runDir!);
      const report = await readFile(join(out, 'test', 'current', 'report.html'), 'utf8');
      for (const study of sandbox.studies()) expect(report).toContain(study.link_id);
      expect(report).toContain('Answers per question');
      expect(report).toContain('Why downloads failed');

      // Buckets with parts (a study changed, one with a new response) beside a study new to current/.
      const [changed, grown] = sandbox.studies();
      const target = sandbox.responses(changed!.link_id)[0]!.id;
      sandbox.mutateListItem(changed!.link_id, target, (item) => ({
        ...item,
        answers_array: (item.answers_array as Array<Record<string, unknown>>).map((a) => ({
          ...a,
          answer: '',
        })),
      }));
      sandbox.touchResponse(changed!.link_id, target, new Date(Date.now() + 60_000));
      sandbox.addResponse(grown!.link_id);
      const added = sandbox.addStudy({ link_id: 'guide-new-study', title: 'Added later', responses: 3 });
      const second = await runAgainst(sandbox, config);
      expect(second.runDir).not.toBeNull();
      await expectAsCounted(out, config, second.runDir!);
      const after = await readFile(join(out, 'test', 'current', 'report.html'), 'utf8');
      expect(after).toContain(added.link_id);
    });
  });

  it('reads no part of a bucket whose figures it is given', async () => {
    await withTempDir(async (out) => {
      await runAgainst(sandbox, sandboxConfig(sandbox, out));
      const storage = await openStorage(join(out, 'test'));
      const studies = sandbox.studies();
      const given = studies[0]!;
      const others = studies.filter((study) => bucketOf(study.id) !== bucketOf(given.id));
      expect(others.length).toBeGreaterThan(0);
      const figures = new RunStats();
      figures.add('studies', [{ study_id: given.id, link_id: 'given', title: 'Given' } as never]);
      const stats = await countCurrent(
        storage,
        new Map([[partitionName(bucketOf(given.id)), [figures.studies.get(given.id)!]]]),
      );
      expect(stats.studies.get(given.id)).toBe(figures.studies.get(given.id));
      expect(stats.studies.get(given.id)?.responses).toBe(0);
      const counted = await countCurrent(storage);
      expect(counted.studies.get(given.id)?.responses).toBeGreaterThan(0);
      for (const other of others) expect(stats.studies.get(other.id)).toEqual(counted.studies.get(other.id));
    });
  });
});
