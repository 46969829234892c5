/**
 * `erase` on a sharded output (two `run --shard K/2` processes into one output): each shard's
 * descriptor of current/ (datapackage-shard-K-of-2.json) is written again, names only files
 * that are there, and is read by the `datapackage` library; every run verifies and the
 * response is in no byte of the output.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { inShard } from '../../src/shard.ts';
import { runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { markResponses, type Traces, tracesOf } from '../helpers/erase.ts';
import { validateDataPackage } from '../helpers/frictionless.ts';
import { scanOutput } from '../helpers/output-scan.ts';
import { KEY_ENV } from '../helpers/run.ts';
import { writeShardedPipeline } from '../helpers/shard.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 44, studies: 10, responses: 2 });
  markResponses(sandbox);
});
afterAll(async () => {
  await sandbox.close();
});

interface Descriptor {
  resources: { path: string | string[] }[];
}

const pathsOf = (descriptor: Descriptor) => descriptor.resources.flatMap((r) => [r.path].flat());

it('writes each shard descriptor of current/ again, naming only files that are there', async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, 'out');
    const config = await writeShardedPipeline(sandbox, dir, {
      dir: out,
      formats: ['csv', 'parquet'],
      media: true,
    });
    for (const index of [1, 2]) {
      const result = await runCli(['run', '--config', config, '--shard', `${index}/2`], {
        env: { [KEY_ENV]: sandbox.api_key },
      });
      expect(result, result.stderr).toMatchObject({ code: 0 });
    }
    const output = join(out, 'sharded');
    const current = join(output, 'current');
    const runs = (await readdir(join(output, 'runs'))).sort();
    expect(runs).toHaveLength(2);
    // A response with recordings, and the shard whose run holds it.
    let runDir = '';
    let traces: Traces | null = null;
    for (const run of runs) {
      runDir = join(output, 'runs', run);
      traces = await tracesOf(runDir).catch(() => null);
      if (traces) break;
    }
    if (!traces) throw new Error('no run of the sandbox archived a recording');
    const studyId = (await readFile(join(runDir, 'responses.csv'), 'utf8'))
      .split('\n')
      .find((line) => line.startsWith(traces.id))
      ?.split(',')[1] as string;
    const shard = [1, 2].find((index) => inShard(studyId, { index, count: 2 })) as number;
    const descriptorName = `datapackage-shard-${shard}-of-2.json`;
    const before = JSON.parse(await readFile(join(current, descriptorName), 'utf8')) as Descriptor;

    const erased = await runCli(['erase', output, '--response', traces.id]);
    expect(erased, erased.stderr).toMatchObject({ code: 0 });

    const names = await readdir(current);
    for (const index of [1, 2]) expect(names).toContain(`datapackage-shard-${index}-of-2.json`);
    const after = JSON.parse(await readFile(join(current, descriptorName), 'utf8')) as Descriptor;
    const present = new Set(
      (await readdir(current, { recursive: true, withFileTypes: true }))
        .filter((entry) => entry.isFile())
        .map((entry) => join(entry.parentPath, entry.name).slice(current.length + 1)),
    );
    for (const path of pathsOf(after)) expect(present, path).toContain(path);
    // The parts that held the response are new parts: the descriptor names them, not the old.
    expect(pathsOf(after)).not.toEqual(pathsOf(before));
    expect(pathsOf(after).some((path) => /part-\d{8}T\d{6}Z/.test(path))).toBe(true);
    for (const index of [1, 2]) {
      const report = await validateDataPackage(current, `datapackage-shard-${index}-of-2.json`);
      expect(report.errors).toEqual([]);
    }
    for (const run of runs) {
      const verified = await runCli(['verify', join(output, 'runs', run)]);
      expect(verified, verified.stdout).toMatchObject({ code: 0 });
    }
    const { id, texts, checksums } = traces;
    expect(await scanOutput(output, [id, ...texts], checksums)).toEqual([]);
  });
});
