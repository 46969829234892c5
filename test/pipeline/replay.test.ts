/**
 * Replay: a run's raw/ re-transformed without the service gives the run's tables back.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import Papa from 'papaparse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRawArchive } from '../../src/load/raw.ts';
import { tableNames } from '../../src/load/tables.ts';
import { replayRaw } from '../../src/pipeline/replay.ts';
import type { RawRecord } from '../../src/records.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runAgainst, sandboxConfig, withTempDir } from './helpers.ts';

const csv = { bom: false, escape_formulae: true };

/** A CSV file as its header and its records sorted (row order is not part of the contract). */
async function csvTable(path: string): Promise<{ header: string[]; rows: string[] }> {
  const parsed = Papa.parse<string[]>(await readFile(path, 'utf8'), { skipEmptyLines: true });
  const [header = [], ...records] = parsed.data;
  return { header, rows: records.map((record) => JSON.stringify(record)).sort() };
}

describe('replayRaw', () => {
  let sandbox: Sandbox;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 11, studies: 4, responses: 30, maxPerPage: 7 });
    const [study] = sandbox.studies();
    const items = sandbox.responses(study!.link_id);
    // Records the run rejects must be left out of the replay in the same way.
    sandbox.mutateListItem(study!.link_id, items[0]!.id, (item) => ({ ...item, short_transcript: 42 }));
    sandbox.mutateDetail(study!.link_id, items[1]!.id, (detail) => ({ ...detail, transcript: 'nope' }));
  });
  afterAll(async () => {
    await sandbox.close();
  });

  it('rebuilds every table and wide sheet of a run from its raw files alone', async () => {
    await withTempDir(async (dir) => {
      const config = sandboxConfig(sandbox, join(dir, 'out'), { source: { per_page: 7 } });
      const run = await runAgainst(sandbox, config, { formats: ['csv', 'parquet'] });
      const runDir = run.runDir as string;
      expect(run.rejects).toBe(2);
      const requestsBefore = sandbox.requests.length;

      const replayDir = join(dir, 'replay');
      const replayed = await replayRaw(join(runDir, 'raw'), replayDir, {
        formats: ['csv', 'parquet'],
        csv,
        buckets: 5,
      });

      expect(sandbox.requests.length).toBe(requestsBefore);
      expect(replayed.tables).toEqual(run.tables);
      expect(replayed.invalid).toBe(2);
      const responses = run.tables.find((t) => t.table === 'responses')?.rows ?? 0;
      expect(responses).toBeGreaterThan(60);
      expect(replayed.responses).toBe(responses);
      for (const table of tableNames) {
        const ours = await csvTable(join(replayDir, `${table}.csv`));
        expect(ours, table).toEqual(await csvTable(join(runDir, `${table}.csv`)));
      }
      const sheets = (await readdir(join(runDir, 'wide'))).sort();
      expect(sheets.length).toBe(sandbox.studies().length);
      expect((await readdir(join(replayDir, 'wide'))).sort()).toEqual(sheets);
      for (const sheet of sheets) {
        const ours = await csvTable(join(replayDir, 'wide', sheet));
        expect(ours, sheet).toEqual(await csvTable(join(runDir, 'wide', sheet)));
      }
      const parquet = (await readdir(replayDir)).filter((f) => f.endsWith('.parquet')).sort();
      expect(parquet).toEqual(tableNames.map((t) => `${t}.parquet`).sort());
      // Bucket files are temporary.
      expect((await readdir(replayDir)).filter((f) => f.startsWith('.replay-'))).toEqual([]);
    });
  });

  it('keeps the newest listing of a response listed twice, and the later of two details', async () => {
    await withTempDir(async (dir) => {
      const [study] = sandbox.studies();
      const [item] = sandbox.responses(study!.link_id);
      const rawDir = join(dir, 'raw');
      const raw = createRawArchive(rawDir);
      const base = { url: 'http://127.0.0.1/x', status: 200, received_at: new Date().toISOString() };
      const listing = (page: number, payload: unknown[]): RawRecord => ({
        ...base,
        operation: 'list_responses',
        link_id: study!.link_id,
        study_id: study!.id,
        page,
        payload,
      });
      const detail = (user: string): RawRecord => ({
        ...base,
        operation: 'get_response',
        link_id: study!.link_id,
        study_id: study!.id,
        response_id: item!.id,
        payload: {
          id: item!.id,
          survey: study!.link_id,
          transcript: [
            {
              moderator: 'hi',
              user,
              discussion_guide_question_id: 'q',
              concept_id: null,
              answer_id: null,
              audio: null,
              video: null,
            },
          ],
        },
      });
      raw.write({ ...base, operation: 'list_surveys', payload: [study] });
      raw.write(listing(0, [{ ...item, updated_at: '2030-01-02T00:00:00Z', short_transcript: 'newer' }]));
      raw.write(listing(1, [{ ...item, updated_at: '2030-01-01T00:00:00Z', short_transcript: 'older' }]));
      raw.write(listing(2, []));
      raw.write(detail('first'));
      raw.write(detail('refreshed'));
      await raw.close();

      const out = join(dir, 'out');
      const replayed = await replayRaw(rawDir, out, { formats: ['csv'], csv });
      expect(replayed.responses).toBe(1);
      const responses = Papa.parse<Record<string, string>>(
        await readFile(join(out, 'responses.csv'), 'utf8'),
        {
          header: true,
          skipEmptyLines: true,
        },
      ).data;
      expect(responses.map((r) => r.short_transcript)).toEqual(['newer']);
      const transcript = Papa.parse<Record<string, string>>(
        await readFile(join(out, 'transcript.csv'), 'utf8'),
        { header: true, skipEmptyLines: true },
      ).data;
      expect(transcript.map((r) => r.user)).toEqual(['refreshed']);
    });
  });
});
