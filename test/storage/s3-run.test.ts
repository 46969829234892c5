/**
 * Runs to s3:// against a real S3-protocol server on loopback (s3rver): what lands in the
 * bucket is downloaded with the plain AWS SDK and read back by independent readers (DuckDB
 * and hyparquet for Parquet, yauzl for media.zip), value by value; verify re-checks the run
 * where it is stored; a rerun on a machine with no local output makes only the incremental
 * requests.
 */
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import type { Manifest } from '../../src/output/manifest.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { duckdb, readHyparquet } from '../helpers/readers.ts';
import { apiRequestsSince, runAgainst, sandboxConfig } from '../helpers/run.ts';
import { type S3Server, startSandboxAndS3 } from '../helpers/s3.ts';
import { isDetailPath } from '../helpers/sandbox.ts';
import { readZip } from '../helpers/zip.ts';

let sandbox: Sandbox;
let s3: S3Server;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ sandbox, s3, stop } = await startSandboxAndS3({ seed: 21, studies: 3, responses: 6 }));
});
afterAll(() => stop?.());

const bucketConfig = (prefix: string, overrides: Record<string, unknown> = {}) =>
  sandboxConfig(sandbox, `s3://exports/${prefix}`, {
    output: { s3: { endpoint: s3.endpoint } },
    media: { enabled: true },
    ...overrides,
  });

/** Every object under `prefix` downloaded into `dir`, keyed relative to the prefix. */
async function download(prefix: string, dir: string): Promise<Map<string, Buffer>> {
  const objects = new Map<string, Buffer>();
  for (const key of await s3.keys('exports', prefix)) {
    const bytes = await s3.get('exports', key);
    const path = key.slice(prefix.length);
    objects.set(path, bytes);
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), bytes);
  }
  return objects;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('a run to s3://', () => {
  it('writes every file of the run to the bucket, readable by independent readers, and verify passes there', async () => {
    await withTempDir(async (dir) => {
      const result = await runAgainst(sandbox, bucketConfig('team'));
      expect(result.status).toBe('complete');
      const runId = result.runDir!.split('/').pop()!;
      expect(result.runDir).toBe(`s3://exports/team/test/runs/${runId}`);

      // Committed: latest names the run, source.json the service; no marker, lease or temporary
      // object is left.
      expect((await s3.get('exports', 'team/test/latest')).toString()).toBe(`${runId}\n`);
      const all = await s3.keys('exports', 'team/test/');
      const others = all.filter(
        (key) =>
          !/^team\/test\/(runs\/[^/]+\/|state\/|current\/)/.test(key) || key.startsWith('team/test/runs/.'),
      );
      expect(others).toEqual(['team/test/latest', 'team/test/source.json']);
      expect(
        all
          .filter((key) => key.startsWith('team/test/runs/'))
          .every((key) => key.startsWith(`team/test/runs/${runId}/`)),
      ).toBe(true);
      // The current dataset is in the bucket too.
      expect(all).toContain('team/test/current/datapackage.json');

      const objects = await download(`team/test/runs/${runId}/`, dir);
      const manifest = JSON.parse(objects.get('manifest.json')!.toString('utf8')) as Manifest;
      // Every object but the manifest is listed with the bytes and sha256 it has in the bucket.
      expect(manifest.files.map((f) => f.path).sort()).toEqual(
        [...objects.keys()].filter((p) => p !== 'manifest.json').sort(),
      );
      for (const file of manifest.files) {
        expect(objects.get(file.path)!.length, file.path).toBe(file.bytes);
        expect(sha256(objects.get(file.path)!), file.path).toBe(file.sha256);
      }
      // No credential went into any object: neither the storage's nor the service's key.
      for (const [path, bytes] of objects) {
        expect(bytes.includes('S3RVER'), path).toBe(false);
        expect(bytes.includes(sandbox.api_key), path).toBe(false);
      }

      // Parquet through DuckDB and hyparquet: every response the sandbox has.
      const expected = sandbox.studies().flatMap((s) => sandbox.responses(s.link_id).map((r) => r.id));
      const fromDuck = await duckdb((query) =>
        query(`select response_id from read_parquet('${join(dir, 'responses.parquet')}')`),
      );
      expect(fromDuck.map((r) => r.response_id as string).sort()).toEqual([...expected].sort());
      const media = await readHyparquet(join(dir, 'media.parquet'));
      const archived = media.filter((row) => row.status === 'archived');
      expect(archived.length).toBeGreaterThan(0);

      // media.zip through yauzl: every archived media row is an entry with its bytes and sha256.
      const entries = new Map((await readZip(join(dir, 'media.zip'))).map((e) => [e.name, e]));
      for (const row of archived) {
        const entry = entries.get(row.file as string);
        expect(entry, row.file as string).toBeDefined();
        expect(entry!.sha256).toBe(row.sha256);
        expect(entry!.size).toBe(Number(row.bytes));
      }

      const verified = await verifyRun(result.runDir!, { endpoint: s3.endpoint });
      expect(verified.problems).toEqual([]);
      expect(verified.checked.zipEntries).toBe(entries.size);
    });
  });

  it('verify names a changed object in the bucket', async () => {
    const result = await runAgainst(sandbox, bucketConfig('tampered', { media: { enabled: false } }));
    const runKey = result.runDir!.replace('s3://exports/', '');
    await s3.put('exports', `${runKey}/answers.csv`, 'answer_id\r\n');
    await s3.put('exports', `${runKey}/extra.txt`, 'not from the run');
    const verified = await verifyRun(result.runDir!, { endpoint: s3.endpoint });
    expect(verified.ok).toBe(false);
    expect(verified.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^answers\.csv: \d+ bytes, the manifest says \d+$/),
        'extra.txt: present but not listed in the manifest',
      ]),
    );
  });

  it('a rerun with no changes on a machine without local output makes 1 + S API requests and downloads nothing', async () => {
    const config = bucketConfig('nightly');
    const first = await runAgainst(sandbox, config);
    expect(first.status).toBe('complete');
    // A fresh machine: nothing local at all; everything it knows is in the bucket.
    const from = sandbox.requests.length;
    const objectsBefore = await s3.keys('exports', 'nightly/test/');
    const latestBefore = (await s3.get('exports', 'nightly/test/latest')).toString();
    const stateOf = async () =>
      Promise.all(
        (await s3.keys('exports', 'nightly/test/state/')).map(async (key) =>
          (await s3.get('exports', key)).toString(),
        ),
      );
    const stateBefore = await stateOf();
    const second = await runAgainst(sandbox, config);
    // Nothing new: no run is written in the bucket, latest and the state are left alone.
    expect(second.status).toBe('unchanged');
    expect(second.unchanged?.latest).toBe(first.runDir!.split('/').pop());
    const api = apiRequestsSince(sandbox, from);
    expect(api).toHaveLength(1 + sandbox.studies().length);
    expect(second.unchanged?.requests).toBe(1 + sandbox.studies().length);
    expect(api.filter((r) => isDetailPath(r.path))).toEqual([]);
    expect(sandbox.requests.slice(from).filter((r) => r.listener !== 'api')).toEqual([]);
    expect(await s3.keys('exports', 'nightly/test/')).toEqual(objectsBefore);
    expect((await s3.get('exports', 'nightly/test/latest')).toString()).toBe(latestBefore);
    expect(await stateOf()).toEqual(stateBefore);
    // The state is in the bucket: one object per study, beside the runs.
    const state = await s3.keys('exports', 'nightly/test/state/');
    expect(state).toEqual(
      sandbox
        .studies()
        .map((study) => `nightly/test/state/${study.id}.json`)
        .sort(),
    );
  });

  it('migrates a state.json found in the bucket, with nothing lost', async () => {
    const study = sandbox.studies()[0]!;
    const entry = {
      link_id: study.link_id,
      watermark: '2020-01-01T00:00:00.000Z',
      last_run: '20200101T000000Z',
      last_run_at: '2020-01-01T00:00:00.000Z',
    };
    const retired = {
      link_id: 'retired',
      watermark: '2019-01-01T00:00:00.000Z',
      last_run: '20190101T000000Z',
      last_run_at: '2019-01-01T00:00:00.000Z',
    };
    const legacy = JSON.stringify({ version: 1, studies: { [study.id]: entry, 'retired-study': retired } });
    await s3.put('exports', 'migrating/test/state.json', legacy);
    const run = await runAgainst(
      sandbox,
      bucketConfig('migrating', { studies: { include: [study.link_id] }, media: { enabled: false } }),
    );
    const runKey = run.runDir!.replace('s3://exports/', '');
    const manifest = JSON.parse((await s3.get('exports', `${runKey}/manifest.json`)).toString()) as Manifest;
    expect(manifest.studies.map((s) => s.since)).toEqual([entry.watermark]);
    const keys = await s3.keys('exports', 'migrating/test/');
    expect(keys).not.toContain('migrating/test/state.json');
    expect((await s3.get('exports', 'migrating/test/state.json.migrated')).toString()).toBe(legacy);
    expect(
      JSON.parse((await s3.get('exports', 'migrating/test/state/retired-study.json')).toString()),
    ).toEqual({
      version: 1,
      study_id: 'retired-study',
      ...retired,
    });
    const advanced = JSON.parse(
      (await s3.get('exports', `migrating/test/state/${study.id}.json`)).toString(),
    );
    expect(advanced.last_run).toBe(run.runDir!.split('/').pop());
  });
});
