/**
 * One study through the stages against the sandbox, into real table writers in a folder: its
 * outcome (responses, a rename warned about, nothing lost), its rows read back with hyparquet,
 * its wide sheet named as asked; with a limit, the first responses the study lists and no more.
 */
import { mkdir, mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listStudies } from '../../src/extract/index.ts';
import { createTableWriters } from '../../src/output/table-writers.ts';
import { exportStudy } from '../../src/pipeline/export-study.ts';
import { silentReporter } from '../../src/pipeline/progress.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { withTempDir } from '../helpers/environment.ts';
import { memorySinks, sandboxClient } from '../helpers/extract.ts';
import { readCsv, readHyparquet } from '../helpers/readers.ts';
import { sandboxConfig } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 29, studies: 2, responses: 5 });
});
afterAll(async () => {
  await sandbox.close();
});

async function exportFirstStudy(dir: string, options: { limit?: number; previousLinkId?: string } = {}) {
  const client = sandboxClient(sandbox);
  const sinks = memorySinks();
  const [study] = await listStudies(client, sinks);
  await mkdir(join(dir, 'run'));
  const files = new LocalStorage(join(dir, 'run'));
  const config = sandboxConfig(sandbox, dir, { output: { formats: ['parquet', 'csv'] } });
  const writers = await createTableWriters(files, { formats: ['parquet', 'csv'], csv: config.output.csv });
  try {
    const outcome = await exportStudy({
      study: study!,
      fileName: 'first-study',
      since: null,
      previousLinkId: options.previousLinkId,
      client,
      config,
      files,
      scratchDir: await mkdtemp(join(dir, 'scratch-')),
      sinks,
      writers,
      media: null,
      reporter: silentReporter,
      pageGate: (_expected, takePage) => takePage(),
      ...(options.limit === undefined ? {} : { limit: options.limit }),
    });
    await writers.endStudy(study!.id);
    await writers.close();
    return { study: study!, outcome, sinks, run: join(dir, 'run') };
  } finally {
    client.close();
  }
}

describe('exportStudy', () => {
  it('writes every response of the study, its rows and its wide sheet, and says what happened', async () => {
    await withTempDir(async (dir) => {
      const { study, outcome, sinks, run } = await exportFirstStudy(dir, { previousLinkId: 'its-old-name' });
      const served = sandbox.responses(study.link_id).map((r) => r.id);
      expect(outcome).toMatchObject({
        study_id: study.id,
        link_id: study.link_id,
        since: null,
        responses: served.length,
        rejects: 0,
        lossless: true,
        error: null,
      });
      expect(sinks.warnings.map((w) => w.code)).toContain('study_renamed');
      const responses = await readHyparquet(join(run, 'responses.parquet'));
      expect(responses.map((row) => row.response_id).sort()).toEqual([...served].sort());
      const answers = await readHyparquet(join(run, 'answers.parquet'));
      expect(new Set(answers.map((row) => row.response_id))).toEqual(new Set(served));
      const { records } = await readCsv(join(run, 'wide', 'first-study.csv'));
      expect(records.length - 1).toBe(served.length);
    });
  });

  it('with a limit, exports the first responses the study lists and no more', async () => {
    await withTempDir(async (dir) => {
      const { study, outcome, run } = await exportFirstStudy(dir, { limit: 2 });
      const served = sandbox.responses(study.link_id).map((r) => r.id);
      expect(outcome.responses).toBe(2);
      const responses = await readHyparquet(join(run, 'responses.parquet'));
      expect(responses.map((row) => row.response_id).sort()).toEqual(served.slice(0, 2).sort());
    });
  });
});
