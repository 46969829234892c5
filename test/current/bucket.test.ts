/**
 * A bucket's merge on a real folder: its new responses part holds the bucket's previous rows
 * and the run's, one copy of each response (the run's), and, for a full export without loss,
 * only the run's rows of that study; the part prepared in scratch is read with hyparquet.
 */
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { studyRow } from '../../src/transform/index.ts';
import { currentOutputIn, prepareStudyRun, publishStudyRun } from '../helpers/current-runs.ts';
import { withTempDir } from '../helpers/environment.ts';
import { study } from '../helpers/fixtures.ts';
import { responseRow } from '../helpers/samples.ts';

const row = (id: string, summary: string) =>
  responseRow(id, { study_id: study.id, link_id: study.link_id, summary });

async function merged(since: string | null): Promise<Record<string, unknown>[]> {
  return withTempDir(async (dir) => {
    const output = currentOutputIn(dir);
    // The bucket as an earlier run left it: two responses of the study.
    await publishStudyRun(output, {
      runId: '20260101T000000Z',
      studyId: study.id,
      rows: { studies: [studyRow(study)], responses: [row('r-1', 'old'), row('r-2', 'kept')] },
    });
    const { prepared } = await prepareStudyRun(output, {
      runId: '20260102T000000Z',
      studyId: study.id,
      rows: { studies: [studyRow(study)], responses: [row('r-1', 'new'), row('r-3', 'added')] },
      since,
    });
    expect(prepared).toHaveLength(1);
    expect(prepared[0]!.rewrite.has('responses')).toBe(true);
    const file = prepared[0]!.parts
      .flatMap((part) => part.files)
      .find((f) => f.target.startsWith('current/responses/') && f.target.endsWith('.parquet'));
    expect(file?.target).toContain('part-20260102T000000Z.parquet');
    const rows = await parquetReadObjects({ file: await asyncBufferFromFile(file!.local) });
    return rows
      .map((r) => ({ id: r.response_id, summary: r.summary }))
      .sort((a, b) => String(a.id).localeCompare(String(b.id)));
  });
}

describe('a bucket merged', () => {
  it('keeps the responses the run did not see, and the run copy of those it did', async () => {
    expect(await merged('2026-01-01T00:00:00.000Z')).toEqual([
      { id: 'r-1', summary: 'new' },
      { id: 'r-2', summary: 'kept' },
      { id: 'r-3', summary: 'added' },
    ]);
  });

  it("holds only the run's rows of a study the run exported whole without loss", async () => {
    expect(await merged(null)).toEqual([
      { id: 'r-1', summary: 'new' },
      { id: 'r-3', summary: 'added' },
    ]);
  });
});
