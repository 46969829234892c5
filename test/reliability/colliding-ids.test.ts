/**
 * Ids whose names could collide: study ids "x/y" and "x_y-bd3c9047" (the second is what a
 * sanitising rule with a hash suffix makes of the first), ids and link_ids that differ only by
 * case, two studies under one link_id, link_ids "col/one" and "col_one-74993218", and response
 * ids ".", "..", "CON", "a/b" and "A/B", and an id too long for a name, served by a loopback
 * service in front of the sandbox.
 * In one run, in two shards, and from an output written under the earlier names: every study
 * keeps its own state file, partitions, wide sheet and workbook; verify passes; DuckDB over
 * current/ (hive partitioning on) returns every response once with its exact study_id.
 */
import { readdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import { runExitCode } from '../../src/cli/report.ts';
import type { PipelineConfig } from '../../src/config/schema.ts';
import { legacyName, partitionName, studyFolderName } from '../../src/current/index.ts';
import { verifyRun } from '../../src/load/verify.ts';
import { nameOf } from '../../src/names.ts';
import { readPipelineState } from '../../src/publish/state.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { tableNames } from '../../src/tables/index.ts';
import { toStudyFolders } from '../helpers/current.ts';
import { withTempDir } from '../helpers/environment.ts';
import { duckdb, readCsv, readHyparquet } from '../helpers/readers.ts';
import { readManifest, runAgainst, sandboxConfig } from '../helpers/run.ts';
import { readZip } from '../helpers/zip.ts';
import { type RenamingService, startRenamingService } from './renaming-service.ts';

interface Spec {
  /** The permanent id served; the sandbox's own (a uuid) when absent. */
  id?: string;
  link_id: string;
  modality?: 'audio' | 'text';
  responseIds?: string[];
}

const LONG = 'Long-'.repeat(30);

const specs: Spec[] = [
  { id: 'x/y', link_id: 'col/one', modality: 'audio' },
  { id: 'x_y-bd3c9047', link_id: 'col_one-74993218' },
  // The same kind of pair, which two shards split between them (shardOfStudy).
  { id: 'a/b', link_id: 'Case' },
  { id: 'a_b-c14cddc0', link_id: 'case' },
  { id: 'STUDY', link_id: 'upper' },
  { id: 'study', link_id: 'lower' },
  { id: '.', link_id: 'dots', modality: 'audio', responseIds: ['.', '..', 'CON', 'a/b', 'A/B'] },
  // Too long for a name: its names end in a hash (src/names.ts).
  { id: LONG, link_id: 'long' },
  // Served as one link_id, "shared".
  { link_id: 'shared-a' },
  { link_id: 'shared-b' },
];
const SHARED = 'shared';

let sandbox: Sandbox;
let service: RenamingService;
/** Each study as served: permanent id, link_id, response ids. */
let studies: { study_id: string; link_id: string; responses: string[] }[];

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 29, studies: 0 });
  const ids: Record<string, string> = {};
  studies = specs.map((spec) => {
    const added = sandbox.addStudy({
      link_id: spec.link_id,
      modality: spec.modality ?? 'text',
      ...(spec.responseIds ? { responseIds: spec.responseIds } : { responses: 3 }),
    });
    if (spec.id) ids[added.id] = spec.id;
    return {
      study_id: spec.id ?? added.id,
      link_id: spec.link_id.startsWith('shared-') ? SHARED : spec.link_id,
      responses: sandbox.responses(spec.link_id).map((r) => r.id),
    };
  });
  service = await startRenamingService(sandbox, {
    ids,
    shared: { linkId: SHARED, from: ['shared-a', 'shared-b'] },
  });
});
afterAll(async () => {
  await service.close();
  await sandbox.close();
});

function config(out: string, formats = ['csv', 'parquet', 'xlsx']): PipelineConfig {
  const base = sandboxConfig(sandbox, out, { output: { formats }, media: { enabled: true } });
  return { ...base, source: { ...base.source, base_url: service.url } };
}

/**
 * Without the two studies under one link_id: which of them a listing serves depends on which
 * asks first, and shards ask in separate runs.
 */
function unshared(base: PipelineConfig): PipelineConfig {
  const ids = studies.filter((s) => s.link_id !== SHARED).map((s) => s.study_id);
  return { ...base, studies: { include: ids, exclude: [] } };
}

/**
 * The (study_id, response_id) pairs the service serves, sorted: the exact ids, which every
 * part of current/ holds.
 */
function expectedPairs(of = studies): string[] {
  return of.flatMap((s) => s.responses.map((r) => JSON.stringify([s.study_id, r]))).sort();
}

/**
 * The studies as the run received them: the two under one link_id each got one of their two
 * sets of responses, whole, in the order they asked; every other study its own.
 */
async function servedStudies(runDir: string): Promise<typeof studies> {
  const rows = (await readCsv(join(runDir, 'responses.csv'))).records;
  const [header, ...records] = rows;
  const [study, response] = [header!.indexOf('study_id'), header!.indexOf('response_id')];
  const got = (id: string) => records.filter((r) => r[study] === id).map((r) => r[response] as string);
  const [a, b] = studies.filter((s) => s.link_id === SHARED) as [(typeof studies)[0], (typeof studies)[0]];
  const swapped = got(a.study_id).sort().join() === [...b.responses].sort().join();
  expect(swapped || got(a.study_id).sort().join() === [...a.responses].sort().join()).toBe(true);
  return studies.map((s) => {
    if (!swapped || s.link_id !== SHARED) return s;
    return { ...s, responses: (s === a ? b : a).responses };
  });
}

/** Every response of current/ with its study_id, as DuckDB reads the hive partitions. */
async function currentPairs(root: string, table = 'responses'): Promise<string[]> {
  const rows = await duckdb((query) =>
    query(
      `select study_id, response_id from read_parquet('${join(root, 'current', table)}/*/*.parquet', hive_partitioning = true)`,
    ),
  );
  return rows.map((row) => JSON.stringify([row.study_id, row.response_id])).sort();
}

/** No two names in `names` are the same on a case-insensitive file system. */
function expectDistinctIgnoringCase(names: string[], count: number): void {
  expect(names).toHaveLength(count);
  expect(new Set(names.map((name) => name.toLowerCase())).size).toBe(count);
}

describe('colliding ids', () => {
  it('one run: every study its own names, verify passes, DuckDB gives back every exact id once', async () => {
    await withTempDir(async (dir) => {
      const out = join(dir, 'out');
      const result = await runAgainst(sandbox, config(out));
      expect(runExitCode(result.status as 'complete')).toBe(0);
      const runDir = result.runDir as string;
      expect((await verifyRun(runDir)).problems).toEqual([]);
      const root = join(out, 'test');

      // The wide sheets and workbooks: one each, named by link_id, by both ids when shared.
      const wide = (await readdir(join(runDir, 'wide'))).sort();
      expectDistinctIgnoringCase(wide, studies.length);
      expectDistinctIgnoringCase(await readdir(join(runDir, 'xlsx')), studies.length);
      // Which of the two studies under one link_id asked first decides which responses it got.
      const served = await servedStudies(runDir);
      for (const study of served) {
        const name =
          study.link_id === SHARED ? `${SHARED}~_${nameOf(study.study_id)}` : nameOf(study.link_id);
        const [header, ...records] = (await readCsv(join(runDir, 'wide', `${name}.csv`))).records;
        const column = header!.indexOf('response_id');
        expect(records.map((r) => r[column]).sort(), name).toEqual([...study.responses].sort());
      }

      // State: one object per study, each under its own name, every watermark moved.
      expectDistinctIgnoringCase(await readdir(join(root, 'state')), studies.length);
      const state = await readPipelineState(root);
      expect(Object.keys(state.studies).sort()).toEqual(studies.map((s) => s.study_id).sort());
      for (const entry of Object.values(state.studies)) expect(entry.watermark).not.toBeNull();

      // current/: the studies' rows in buckets, read back with the exact ids; a sheet folder per study.
      expectDistinctIgnoringCase(await readdir(join(root, 'current', 'wide')), studies.length);
      expect(await currentPairs(root)).toEqual(expectedPairs(served));
      expect(new Set(await currentPairs(root, 'answers'))).toEqual(new Set(expectedPairs(served)));
      // Every part holds study_id: a bucket's folder names no study.
      const buckets = new Set(studies.map((study) => bucketOf(study.study_id)));
      for (const bucket of buckets) {
        const folder = join(root, 'current', 'answers', partitionName(bucket));
        const [part] = (await readdir(folder)).filter((name) => name.endsWith('.parquet'));
        const columns = await duckdb((query) =>
          query(`describe select * from read_parquet('${join(folder, part!)}', hive_partitioning = false)`),
        );
        expect(columns.some((column) => column.column_name === 'study_id')).toBe(true);
        expect((await readHyparquet(join(folder, part!))).length).toBeGreaterThan(0);
      }
      // The one id too long for a name: its state object and sheet folder end in a hash, and a
      // hive reader gives back that name (docs/outputs.md); the id itself is in the files and the state.
      expect(studyFolderName(LONG)).toMatch(/^study_id=(%4Cong-)+[^~]*~[0-9a-f]{16}$/);
      expect(await readdir(join(root, 'state'))).toContain(`${nameOf(LONG)}.json`);
      expect(nameOf(LONG)).toMatch(/~~[0-9a-f]{16}$/);
      for (const study of studies) {
        const sheets = await readdir(join(root, 'current', 'wide', studyFolderName(study.study_id)));
        expect(sheets).toEqual([`${nameOf(study.link_id)}.csv`]);
      }

      // The recordings of ".", "..", "CON", "a/b" and "A/B": each in a folder of its own.
      const entries = (await readZip(join(runDir, 'media.zip'))).map((entry) => entry.name);
      const folders = new Set(entries.filter((e) => e.startsWith('dots/')).map((e) => e.split('/')[1]));
      expect([...folders].sort()).toEqual(['a~2Fb', '~2E', '~2E~2E', '~41~2F~42', '~43~4F~4E']);
    });
  });

  it("two shards: neither deletes or overwrites the other's parts or state", async () => {
    await withTempDir(async (dir) => {
      const out = join(dir, 'out');
      const root = join(out, 'test');
      for (const index of [1, 2, 1]) {
        const result = await runAgainst(sandbox, unshared(config(out, ['csv', 'parquet'])), {
          shard: { index, count: 2 },
          full: true,
        });
        expect(runExitCode(result.status as 'complete')).toBe(0);
        expect((await verifyRun(result.runDir as string)).problems).toEqual([]);
        const pairs = await currentPairs(root);
        expect(new Set(pairs).size).toBe(pairs.length);
      }
      // Both shards' studies, every response once, every state object its own.
      const served = studies.filter((s) => s.link_id !== SHARED);
      expect(await currentPairs(root)).toEqual(expectedPairs(served));
      const state = await readPipelineState(root);
      expect(Object.keys(state.studies).sort()).toEqual(served.map((s) => s.study_id).sort());
      expectDistinctIgnoringCase(await readdir(join(root, 'state')), served.length);
    });
  });

  it('moves an output written under the earlier names to the new ones, nothing lost', async () => {
    await withTempDir(async (dir) => {
      const out = join(dir, 'out');
      const root = join(out, 'test');
      // The colliding pairs shared a folder under the earlier names: only studies that did not.
      const alone = studies.filter(
        (s) => !['x_y-bd3c9047', 'a_b-c14cddc0'].includes(s.study_id) && s.link_id !== SHARED,
      );
      const first = await runAgainst(sandbox, {
        ...config(out),
        studies: { include: alone.map((s) => s.study_id), exclude: [] },
      });
      expect(first.status).toBe('complete');
      // The earlier layout, a folder per study in each table, under the older rule's names
      // (legacyName), its parts holding study_id. A move stopped half way: x/y's bucket of
      // answers already written, the study folders still there.
      await toStudyFolders(join(root, 'current'), {
        folderOf: legacyName,
        holdStudyId: true,
        keep: (table, bucket) => table === 'answers' && bucket === partitionName(bucketOf('x/y')),
      });
      let moved = 0;
      for (const study of alone) {
        const [now, before] = [studyFolderName(study.study_id), `study_id=${legacyName(study.study_id)}`];
        if (now === before) continue;
        moved += 1;
        await rename(
          join(root, 'state', `${nameOf(study.study_id)}.json`),
          join(root, 'state', `${legacyName(study.study_id)}.json`),
        );
        for (const [folder, ext] of [
          ['wide', 'csv'],
          ['xlsx', 'xlsx'],
        ] as const) {
          await rename(join(root, 'current', folder, now), join(root, 'current', folder, before));
          const sheet = join(root, 'current', folder, before);
          await rename(
            join(sheet, `${nameOf(study.link_id)}.${ext}`),
            join(sheet, `${legacyName(study.link_id)}.${ext}`),
          );
        }
      }
      expect(moved).toBeGreaterThanOrEqual(4);
      expect(await readdir(join(root, 'current', 'answers'))).toContain(partitionName(bucketOf('x/y')));
      const stateBefore = await readPipelineState(root);

      // A new response in one of them, so the next run has something to commit.
      const added = sandbox.addResponse('col/one');
      const xy = studies.find((s) => s.study_id === 'x/y')!;
      try {
        const second = await runAgainst(sandbox, {
          ...config(out),
          studies: { include: alone.map((s) => s.study_id), exclude: [] },
        });
        expect(runExitCode(second.status as 'complete')).toBe(0);
        expect((await verifyRun(second.runDir as string)).problems).toEqual([]);
        // Incremental from the state under its earlier names.
        const manifest = await readManifest(second.runDir as string);
        for (const study of manifest.studies) {
          expect(study.since, study.study_id).toBe(stateBefore.studies[study.study_id]?.watermark);
        }
        const responses = (await readCsv(join(second.runDir as string, 'responses.csv'))).records;
        expect(responses.map((r) => r[0])).toContain(added);

        // Only buckets and the new sheet names are left, and every response is there once with its exact id.
        const buckets = [...new Set(alone.map((s) => partitionName(bucketOf(s.study_id))))].sort();
        for (const table of tableNames) {
          expect((await readdir(join(root, 'current', table))).sort(), table).toEqual(buckets);
        }
        const names = alone.map((s) => studyFolderName(s.study_id)).sort();
        for (const folder of ['wide', 'xlsx']) {
          expect((await readdir(join(root, 'current', folder))).sort(), folder).toEqual(names);
        }
        expect((await readdir(join(root, 'state'))).sort()).toEqual(
          alone.map((s) => `${nameOf(s.study_id)}.json`).sort(),
        );
        const after = await readPipelineState(root);
        expect(Object.keys(after.studies).sort()).toEqual(Object.keys(stateBefore.studies).sort());
        expect(await currentPairs(root)).toEqual(
          expectedPairs(alone.map((s) => (s === xy ? { ...s, responses: [...s.responses, added] } : s))),
        );
        for (const study of alone) {
          const books = join(root, 'current', 'xlsx', studyFolderName(study.study_id));
          expect(await readdir(books)).toEqual([`${nameOf(study.link_id)}.xlsx`]);
          const folder = join(root, 'current', 'wide', studyFolderName(study.study_id));
          expect(await readdir(folder)).toEqual([`${nameOf(study.link_id)}.csv`]);
          expect(await readFile(join(folder, `${nameOf(study.link_id)}.csv`), 'utf8')).toContain(
            study.responses[0],
          );
        }
      } finally {
        sandbox.deleteResponse('col/one', added);
      }
    });
  });
});
