/**
 * The main job end to end against the sandbox over loopback HTTP: what lands on disk is
 * compared value by value with what the sandbox serves, read back by independent readers
 * (DuckDB and hyparquet for Parquet, papaparse for CSV, yauzl for the zip).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListedResponse } from '../../src/api/resources.ts';
import { AuthError } from '../../src/errors.ts';
import { verifyRun } from '../../src/load/verify.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { duckdb, readCsv, readHyparquet } from '../helpers/readers.ts';
import { KEY_ENV, readManifest, runAgainst, sandboxConfig } from '../helpers/run.ts';
import { detailOf } from '../helpers/sandbox.ts';
import { readZip } from '../helpers/zip.ts';

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 11, studies: 3, responses: 9 });
});
afterAll(async () => {
  await sandbox.close();
});

function allListed(): { studyId: string; linkId: string; listed: ListedResponse }[] {
  return sandbox
    .studies()
    .flatMap((study) =>
      sandbox
        .responses(study.link_id)
        .map((listed) => ({ studyId: study.id, linkId: study.link_id, listed })),
    );
}

describe('a full run', () => {
  it('writes every response, answer and transcript row as the sandbox serves them', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { media: { enabled: true } });
      const result = await runAgainst(sandbox, config);
      expect(result.status).toBe('complete');
      const runDir = result.runDir!;
      const expected = allListed();

      // responses.parquet through DuckDB, value by value.
      const responses = await duckdb((query) =>
        query(
          `select response_id, study_id, response_number, epoch_ms(created_at) as created_ms,
                  epoch_ms(updated_at) as updated_ms, summary, short_transcript
           from read_parquet('${join(runDir, 'responses.parquet')}')`,
        ),
      );
      expect(responses).toHaveLength(expected.length);
      const byId = new Map(responses.map((r) => [r.response_id as string, r]));
      for (const { studyId, listed } of expected) {
        const row = byId.get(listed.id);
        expect(row, listed.id).toBeDefined();
        expect(row!.study_id).toBe(studyId);
        expect(row!.response_number === null ? undefined : Number(row!.response_number)).toBe(
          listed.response_number,
        );
        expect(Number(row!.created_ms)).toBe(Date.parse(listed.created_at));
        expect(row!.updated_ms === null ? undefined : Number(row!.updated_ms)).toBe(
          listed.updated_at === undefined ? undefined : Date.parse(listed.updated_at),
        );
        expect(row!.summary).toBe(listed.answers.Summary);
        expect(row!.short_transcript).toBe(listed.short_transcript);
      }

      // answers.parquet through hyparquet, value by value against answers_array.
      const answers = await readHyparquet(join(runDir, 'answers.parquet'));
      const answerKey = (r: { response_id: unknown; answer_id: unknown }) =>
        `${r.response_id}|${r.answer_id}`;
      const answerRows = new Map(answers.map((r) => [answerKey(r as never), r]));
      let answerCount = 0;
      for (const { listed } of expected) {
        for (const answer of listed.answers_array ?? []) {
          answerCount += 1;
          const row = answerRows.get(`${listed.id}|${answer.answer_id}`);
          expect(row).toMatchObject({
            question: answer.question,
            answer: answer.answer,
            concept_id: answer.concept_id,
            discussion_guide_question_id: answer.discussion_guide_question_id,
          });
        }
      }
      expect(answers).toHaveLength(answerCount);

      // transcript.parquet against the single-response payloads.
      const transcript = await readHyparquet(join(runDir, 'transcript.parquet'));
      for (const { linkId, listed } of expected.slice(0, 6)) {
        const detail = await detailOf(sandbox, linkId, listed.id);
        const rows = transcript
          .filter((r) => r.response_id === listed.id)
          .sort((a, b) => Number(a.turn) - Number(b.turn));
        expect(rows.map((r) => [r.moderator, r.user, r.answer_id, r.concept_id])).toEqual(
          detail.transcript.map((t) => [t.moderator, t.user, t.answer_id, t.concept_id]),
        );
        const withMedia = detail.transcript.filter((t) => t.audio !== null || t.video !== null).length;
        expect(rows.filter((r) => r.audio_file !== null || r.video_file !== null)).toHaveLength(withMedia);
      }

      // The CSV says what the Parquet says (papaparse), formula escaping aside.
      const csv = await readCsv(join(runDir, 'answers.csv'));
      const [header, ...records] = csv.records;
      const answerColumn = header!.indexOf('answer');
      const csvAnswers = new Set(records.map((r) => r[answerColumn]!.replace(/^'(?=[=+\-@\t\r\0])/, '')));
      for (const row of answers) expect(csvAnswers.has(row.answer as string)).toBe(true);
      expect(records).toHaveLength(answers.length);

      // Every archived media row is in the zip with its bytes.
      const media = await readHyparquet(join(runDir, 'media.parquet'));
      const entries = new Map((await readZip(join(runDir, 'media.zip'))).map((e) => [e.name, e]));
      expect(media.length).toBeGreaterThan(0);
      for (const row of media) {
        expect(row.status).toBe('archived');
        expect(entries.get(row.file as string)?.sha256).toBe(row.sha256);
      }

      // No signed URL in any table (attributes may carry respondents' own URLs, so look for the media hosts).
      for (const file of await readdir(runDir)) {
        if (!file.endsWith('.csv')) continue;
        const text = await readFile(join(runDir, file), 'utf8');
        for (const host of [sandbox.storage_url, sandbox.stream_url, 'sig='])
          expect(text).not.toContain(host);
      }
      const verified = await verifyRun(runDir);
      expect(verified.problems).toEqual([]);
    });
  });

  it('records the run in the manifest without the key', async () => {
    await withTempDir(async (out) => {
      const result = await runAgainst(sandbox, sandboxConfig(sandbox, out));
      const manifest = await readManifest(result.runDir!);
      const text = await readFile(join(result.runDir!, 'manifest.json'), 'utf8');
      expect(text).not.toContain(sandbox.api_key);
      expect(manifest.tables.responses).toBe(allListed().length);
      expect(manifest.files.map((f) => f.path)).toContain('raw/get_response.jsonl.gz');
      expect(
        (manifest.requests as { requests: Record<string, Record<string, number>> }).requests.get_response?.[
          '200'
        ],
      ).toBe(allListed().length);
      expect(await readFile(join(out, 'test', 'latest'), 'utf8')).toBe(`${manifest.run_id}\n`);
    });
  });

  it('leaves nothing on disk when the key is refused', async () => {
    await withTempDir(async (out) => {
      const run = runAgainst(sandbox, sandboxConfig(sandbox, out), { env: { [KEY_ENV]: 'wrong-key' } });
      await expect(run).rejects.toThrow(AuthError);
      expect(await readdir(out)).toEqual([]);
    });
  });

  it('plans a dry run without writing anything', async () => {
    await withTempDir(async (out) => {
      const result = await runAgainst(sandbox, sandboxConfig(sandbox, out), { dryRun: true });
      expect(result.status).toBe('planned');
      expect(result.plan?.studies.map((s) => s.study_id).sort()).toEqual(
        sandbox
          .studies()
          .map((s) => s.id)
          .sort(),
      );
      expect(result.plan?.studies.every((s) => s.expected_responses === 9)).toBe(true);
      expect(await readdir(out)).toEqual([]);
    });
  });
});
