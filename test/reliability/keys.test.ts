/**
 * Declared keys hold whatever the service sends, through the command line: an answer_id
 * listed twice in one response (alike: collapsed with a warning; different: the response is
 * a reject, exit 3, its study's watermark held), and a response id listed under two studies,
 * in one run and across runs (current/ already holds it under another study). Every run
 * committed passes verify, and DuckDB over the run's Parquet and over current/ (hive
 * partitioning) finds every key once.
 */

import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import { partitionName } from '../../src/current/index.ts';
import { verifyRun } from '../../src/load/verify.ts';
import { readPipelineState } from '../../src/publish/state.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { duckdb } from '../helpers/readers.ts';
import { KEY_ENV, readManifest } from '../helpers/run.ts';
import { readRejects } from '../helpers/run-files.ts';

const NAME = 'keys';

/** `study-export run` against the sandbox; the run folder it committed, if any. */
async function run(sandbox: Sandbox, dir: string, args: string[] = []) {
  const out = join(dir, 'out');
  const pipelineFile = join(dir, 'pipeline.yaml');
  await writeFile(
    pipelineFile,
    [
      `name: ${NAME}`,
      `source: { base_url: "${sandbox.base_url}", api_key_env: ${KEY_ENV}, retries: 0 }`,
      `output: { dir: "${out}", formats: [csv, parquet] }`,
      'media: { enabled: false }',
      '',
    ].join('\n'),
  );
  const cli = await runCli(['run', '--config', pipelineFile, ...args], {
    cwd: dir,
    env: { [KEY_ENV]: sandbox.api_key },
  });
  const match = /^run: (.+)$/m.exec(cli.stdout)?.[1];
  const runDir = match === undefined ? null : match.startsWith('/') ? match : join(dir, match);
  return { ...cli, runDir, pipelineDir: join(out, NAME), current: join(out, NAME, 'current') };
}

/** Rows DuckDB reads from a Parquet file or a hive-partitioned glob. */
function query(sql: string) {
  return duckdb((q) => q(sql));
}

/** Every key of responses and answers once, in the run's Parquet and in current/; verify passes. */
async function expectKeysOnce(runDir: string, current: string): Promise<{ responses: string[] }> {
  expect((await verifyRun(runDir)).problems).toEqual([]);
  const sources = [
    (table: string) => `read_parquet('${join(runDir, `${table}.parquet`)}')`,
    (table: string) => `read_parquet('${join(current, table, '*', '*.parquet')}', hive_partitioning = true)`,
  ];
  let responses: string[] = [];
  for (const from of sources) {
    const twice = await query(
      `select response_id, count(*)::int as n from ${from('responses')} group by 1 having n > 1`,
    );
    expect(twice, from('responses')).toEqual([]);
    const answersTwice = await query(
      `select response_id, answer_id, count(*)::int as n from ${from('answers')} group by 1, 2 having n > 1`,
    );
    expect(answersTwice, from('answers')).toEqual([]);
    responses = (await query(`select response_id from ${from('responses')} order by 1`)).map(
      (row) => row.response_id as string,
    );
  }
  return { responses };
}

it('an answer_id listed twice: alike, collapsed with a warning (exit 0); different, a reject naming it (exit 3, watermark held)', async () => {
  const sandbox = await startSandbox({ seed: 101, studies: 1, responses: 3 });
  try {
    await withTempDir(async (dir) => {
      const [study] = sandbox.studies();
      const link = study!.link_id;
      const [alike, different] = sandbox.responses(link);
      sandbox.mutateListItem(link, alike!.id, (item) => {
        const answers = item.answers_array as Record<string, unknown>[];
        return { ...item, answers_array: [...answers, { ...answers[1] }] };
      });
      const first = await run(sandbox, dir);
      expect(first.code, first.stderr).toBe(0);
      const manifest = await readManifest(first.runDir!);
      const repeated = manifest.warnings.filter((w) => w.code === 'duplicate_answer');
      expect(repeated).toHaveLength(1);
      const answerId = (alike!.answers_array as { answer_id: string }[])[1]!.answer_id;
      expect(repeated[0]!.message).toContain(`"${alike!.id}" lists answer_id "${answerId}" 2 times`);
      expect(first.stdout + first.stderr).toContain(
        `lists answer_id "${answerId}" 2 times, every copy alike`,
      );
      const answers = await query(
        `select answer_id from read_parquet('${join(first.runDir!, 'answers.parquet')}') where response_id = '${alike!.id}'`,
      );
      expect(answers.map((a) => a.answer_id)).toEqual(
        (alike!.answers_array as { answer_id: string }[])
          .map((a) => a.answer_id)
          .filter((id) => id !== 'Summary'),
      );
      expect((await expectKeysOnce(first.runDir!, first.current)).responses).toHaveLength(3);
      const stateBefore = await readPipelineState(first.pipelineDir);

      // Now the other response names one answer_id twice, with two different answers.
      sandbox.mutateListItem(link, different!.id, (item) => {
        const answers = item.answers_array as Record<string, unknown>[];
        return {
          ...item,
          answers_array: [...answers, { ...answers[2], answer: 'a second, different answer' }],
        };
      });
      sandbox.touchResponse(link, different!.id);
      const second = await run(sandbox, dir);
      expect(second.code, second.stderr).toBe(3);
      const rejects = await readRejects(second.runDir!);
      expect(rejects).toHaveLength(1);
      const clash = (different!.answers_array as { answer_id: string }[])[2]!.answer_id;
      expect(rejects[0]).toMatchObject({
        operation: 'list_responses',
        response_id: different!.id,
        study_id: study!.id,
      });
      expect(rejects[0]!.reason).toContain(`"${clash}" is also answers_array[2], with different content`);
      // The raw item is kept as received, both copies in it.
      const raw = rejects[0]!.raw as { answers_array: { answer: string }[] };
      expect(raw.answers_array.at(-1)!.answer).toBe('a second, different answer');
      expect((await readPipelineState(second.pipelineDir)).studies[study!.id]).toEqual(
        stateBefore.studies[study!.id],
      );
      const { responses } = await expectKeysOnce(second.runDir!, second.current);
      // current/ keeps the earlier copy of the rejected response: every response once.
      expect(responses).toEqual(
        sandbox
          .responses(link)
          .map((r) => r.id)
          .sort(),
      );
    });
  } finally {
    await sandbox.close();
  }
});

it('a response id under two studies in one run: exported by one, a reject naming both in the other (exit 3)', async () => {
  const sandbox = await startSandbox({ seed: 102, studies: 0 });
  try {
    await withTempDir(async (dir) => {
      const a = sandbox.addStudy({ link_id: 'study-a', responseIds: ['shared', 'a-only'] });
      const b = sandbox.addStudy({ link_id: 'study-b', responseIds: ['b-only', 'shared'] });
      const result = await run(sandbox, dir);
      expect(result.code, result.stderr).toBe(3);
      const rejects = await readRejects(result.runDir!);
      expect(rejects).toHaveLength(1);
      const [reject] = rejects;
      expect(reject).toMatchObject({ operation: 'list_responses', response_id: 'shared' });
      expect(reject!.reason).toContain('is listed under two studies in this run');
      for (const study of [a, b]) expect(reject!.reason).toContain(`"${study.link_id}" (${study.id})`);
      const { responses } = await expectKeysOnce(result.runDir!, result.current);
      expect(responses).toEqual(['a-only', 'b-only', 'shared']);
      // The study that exported it is the one the reject does not name as rejecting it.
      const owner = await query(
        `select study_id from read_parquet('${join(result.runDir!, 'responses.parquet')}') where response_id = 'shared'`,
      );
      const loser = reject!.study_id;
      expect([a.id, b.id]).toContain(loser);
      expect(owner).toEqual([{ study_id: loser === a.id ? b.id : a.id }]);
      const state = await readPipelineState(result.pipelineDir);
      expect(state.studies[loser!]).toBeUndefined();
      expect(state.studies[loser === a.id ? b.id : a.id]?.watermark).toEqual(expect.any(String));
    });
  } finally {
    await sandbox.close();
  }
});

it('a response id current/ holds under one study, listed by another in a later run: a reject naming the first; current/ keeps one row', async () => {
  const sandbox = await startSandbox({ seed: 103, studies: 0 });
  try {
    await withTempDir(async (dir) => {
      const a = sandbox.addStudy({ link_id: 'study-a', responseIds: ['shared', 'a-only'] });
      const b = sandbox.addStudy({ link_id: 'study-b', responseIds: ['b-only', 'shared'] });
      // Study a's responses are old: its next incremental run lists none of them again.
      for (const id of ['shared', 'a-only'])
        sandbox.touchResponse('study-a', id, new Date('2025-01-01T00:00:00Z'));
      const first = await run(sandbox, dir, ['--study', 'study-a']);
      expect(first.code, first.stderr).toBe(0);
      await expectKeysOnce(first.runDir!, first.current);

      const second = await run(sandbox, dir);
      expect(second.code, second.stderr).toBe(3);
      const rejects = await readRejects(second.runDir!);
      expect(rejects).toHaveLength(1);
      expect(rejects[0]).toMatchObject({
        operation: 'list_responses',
        response_id: 'shared',
        study_id: b.id,
      });
      expect(rejects[0]!.reason).toContain(`current/ holds it under study "study-a" (${a.id})`);
      expect(rejects[0]!.reason).toContain(`"study-b" (${b.id})`);
      const { responses } = await expectKeysOnce(second.runDir!, second.current);
      expect(responses).toEqual(['a-only', 'b-only', 'shared']);
      const shared = await query(
        `select study_id from read_parquet('${join(second.current, 'responses', '*', '*.parquet')}', hive_partitioning = true) where response_id = 'shared'`,
      );
      expect(shared).toEqual([{ study_id: a.id }]);
      // Only the committed runs exist: both were committed (exit 0 and exit 3).
      expect(
        (await readdir(join(second.pipelineDir, 'runs'))).filter((n) => !n.startsWith('.')),
      ).toHaveLength(2);
      const state = await readPipelineState(second.pipelineDir);
      expect(state.studies[b.id]).toBeUndefined();
    });
  } finally {
    await sandbox.close();
  }
});

it('an attributes key the service sends twice in one object: alike, kept once with a warning; different, a reject naming it (exit 3)', async () => {
  const sandbox = await startSandbox({ seed: 104, studies: 1, responses: 3 });
  try {
    await withTempDir(async (dir) => {
      const [study] = sandbox.studies();
      const link = study!.link_id;
      const [alike, different] = sandbox.responses(link);
      // JSON.stringify cannot write a key twice: the page's text is edited as a service would send it.
      const page = (edit: (text: string, id: string) => string) => {
        let text = JSON.stringify(sandbox.responses(link));
        text = edit(text, alike!.id);
        return text;
      };
      const twice = (text: string, id: string, first: string, second: string) =>
        text.replace(`"id":"${id}"`, `"id":"${id}","attributes":{"src":${first},"src":${second}}`).replace(
          // The item's own attributes (now the second) are dropped, so the edited object is the one read.
          new RegExp(`("id":"${id}","attributes":\\{[^}]*\\}[^]*?),"attributes":\\{[^}]*\\}`),
          '$1',
        );
      sandbox.overrideNext(
        { listener: 'api', pathIncludes: `/${link}?` },
        { status: 200, body: page((text, id) => twice(text, id, '"mail"', '"mail"')) },
      );
      const first = await run(sandbox, dir);
      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr).toContain(
        `response "${alike!.id}" sends attributes key "src" 2 times, every copy alike`,
      );
      const warnings = (await readManifest(first.runDir!)).warnings.filter((w) => w.code === 'duplicate_key');
      expect(warnings).toHaveLength(1);
      const src = await query(
        `select value from read_parquet('${join(first.current, 'attributes', '*', '*.parquet')}', hive_partitioning = true) where response_id = '${alike!.id}' and key = 'src'`,
      );
      expect(src).toEqual([{ value: 'mail' }]);
      await expectKeysOnce(first.runDir!, first.current);

      sandbox.touchResponse(link, different!.id);
      sandbox.overrideNext(
        { listener: 'api', pathIncludes: `/${link}?` },
        { status: 200, body: page((text) => twice(text, different!.id, '"mail"', '"web"')) },
      );
      const second = await run(sandbox, dir);
      expect(second.code, second.stderr).toBe(3);
      const rejects = await readRejects(second.runDir!);
      expect(rejects.map((r) => [r.response_id, r.operation])).toEqual([[different!.id, 'list_responses']]);
      expect(rejects[0]!.reason).toContain('attributes: key "src" appears 2 times with different values');
      await expectKeysOnce(second.runDir!, second.current);
    });
  } finally {
    await sandbox.close();
  }
});

it('a response id current/ already holds under two studies (shards at once, or older data): a warning, and no third copy', async () => {
  const sandbox = await startSandbox({ seed: 105, studies: 0 });
  try {
    await withTempDir(async (dir) => {
      const a = sandbox.addStudy({ link_id: 'study-a', responseIds: ['shared', 'a-only'] });
      const b = sandbox.addStudy({ link_id: 'study-b', responseIds: ['b-only', 'shared'] });
      for (const [link, id] of [
        ['study-a', 'shared'],
        ['study-a', 'a-only'],
        ['study-b', 'b-only'],
        ['study-b', 'shared'],
      ] as const)
        sandbox.touchResponse(link, id, new Date('2025-01-01T00:00:00Z'));
      // Study b's partitions are out of sight while study a is first exported: both then hold "shared".
      const first = await run(sandbox, dir, ['--study', 'study-b']);
      expect(first.code, first.stderr).toBe(0);
      const hidden = join(dir, 'hidden');
      await mkdir(hidden);
      // Study a's bucket is another (the ids are the seed's).
      expect(bucketOf(a.id)).not.toBe(bucketOf(b.id));
      const partition = partitionName(bucketOf(b.id));
      const tables = (await readdir(first.current, { withFileTypes: true })).filter((e) => e.isDirectory());
      const moved: string[] = [];
      for (const table of tables) {
        const from = join(first.current, table.name, partition);
        if (!existsSync(from)) continue;
        await rename(from, join(hidden, table.name));
        moved.push(table.name);
      }
      expect(moved).toContain('responses');
      const second = await run(sandbox, dir, ['--study', 'study-a']);
      expect(second.code, second.stderr).toBe(0);
      for (const table of moved) await rename(join(hidden, table), join(first.current, table, partition));

      // Study a changes its "shared": exported there again, with a warning about the two copies.
      sandbox.touchResponse('study-a', 'shared');
      const third = await run(sandbox, dir);
      expect(third.code, third.stderr).toBe(0);
      const warnings = (await readManifest(third.runDir!)).warnings.filter(
        (w) => w.code === 'response_in_two_studies',
      );
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.message).toContain('current/ holds 1 response id(s) under more than one study');
      expect(warnings[0]!.message).toContain('"shared"');
      for (const study of [a, b]) expect(warnings[0]!.message).toContain(study.id);
      expect(await readRejects(third.runDir!)).toEqual([]);
      expect((await verifyRun(third.runDir!)).problems).toEqual([]);
      const counts = await query(
        `select response_id, count(*)::int as n from read_parquet('${join(third.current, 'responses', '*', '*.parquet')}', hive_partitioning = true) group by 1 order by 1`,
      );
      expect(counts).toEqual([
        { response_id: 'a-only', n: 1 },
        { response_id: 'b-only', n: 1 },
        { response_id: 'shared', n: 2 },
      ]);
    });
  } finally {
    await sandbox.close();
  }
});
