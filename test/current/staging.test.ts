/**
 * A run's rows staged for the current dataset, study by study: read back per table in the
 * order written, the study's responses that ended incomplete remembered, a study with nothing
 * staged reading as empty, and everything gone with the staging folder.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CurrentStaging } from '../../src/current/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { awkwardAnswers, responseRow } from '../helpers/samples.ts';

async function all<T>(rows: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const row of rows) out.push(row);
  return out;
}

describe('CurrentStaging', () => {
  it("gives back each study's rows of each table as they were written", async () => {
    await withTempDir(async (dir) => {
      const staging = await CurrentStaging.open(join(dir, 'staging'));
      const first = staging.forStudy('s-1');
      const second = staging.forStudy('s-2');
      await first.write('answers', awkwardAnswers.slice(0, 5));
      await second.write('responses', [responseRow('r-9', { study_id: 's-2' })]);
      await first.write('answers', awkwardAnswers.slice(5));
      await first.write('responses', [responseRow('r-1'), responseRow('r-2')]);
      first.markIncomplete('r-2');
      await first.close();
      await second.close();
      expect(staging.studyIds()).toEqual(['s-1', 's-2']);
      expect(await all(staging.rows('s-1', 'answers'))).toEqual(awkwardAnswers);
      expect((await all(staging.rows('s-1', 'responses'))).map((row) => row.response_id)).toEqual([
        'r-1',
        'r-2',
      ]);
      expect((await all(staging.rows('s-2', 'responses'))).map((row) => row.response_id)).toEqual(['r-9']);
      expect(await all(staging.rows('s-2', 'answers'))).toEqual([]);
      expect(await all(staging.rows('s-3', 'responses'))).toEqual([]);
      expect([...staging.incompleteOf('s-1')]).toEqual(['r-2']);
      expect([...staging.incompleteOf('s-2')]).toEqual([]);
      await staging.remove();
      expect(await readdir(dir)).toEqual([]);
    });
  });
});
