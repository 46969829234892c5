/**
 * Schema drift against the sandbox over HTTP: a study changed on the service between two runs
 * (a question slot added with a new concept, a question reworded, a URL parameter added, fields
 * the spec does not name at three places, a field's type changed; then a question slot, a URL
 * parameter and those fields no longer sent) gives exactly those entries
 * in the manifest, one JSON event each, a line of the summary, a section of report.html and the
 * codebook, while a study that did not change gives none; under schema.on_change: fail the run
 * commits nothing (latest, the state and current/ unchanged byte for byte) and exits 4 naming
 * every change, and --accept-schema-change commits it and says so in the manifest.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SchemaChange } from '../../src/drift/schema.ts';
import { readPipelineState } from '../../src/publish/state.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { KEY_ENV, readManifest, runAgainst, sandboxConfig, snapshot } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeEach(async () => {
  sandbox = await startSandbox({ seed: 41, studies: 3, responses: 6 });
});
afterEach(async () => {
  await sandbox.close();
});

/** A pipeline file for the CLI: the sandbox, CSV, no media, the given schema rule. */
async function pipelineFile(dir: string, out: string, onChange: 'warn' | 'fail'): Promise<string> {
  const file = join(dir, 'drift.yaml');
  await writeFile(
    file,
    [
      'name: test',
      `source: { base_url: "${sandbox.base_url}", api_key_env: ${KEY_ENV}, retries: 1 }`,
      `output: { dir: "${out}", formats: [csv] }`,
      'media: { enabled: false }',
      `schema: { on_change: ${onChange} }`,
    ].join('\n'),
  );
  return file;
}

function run(file: string, ...args: string[]) {
  return runCli(['run', '--config', file, ...args], { env: { [KEY_ENV]: sandbox.api_key } });
}

/** The first study changed every way the sandbox can, and a respondent after the change. */
function changeFirstStudy(): string {
  const link = sandbox.studies()[0]!.link_id;
  sandbox.changeSchema(link, {
    kind: 'add_question',
    question: 'Would you <b>buy</b> it?',
    discussion_guide_question_id: 'dg-9',
    concept_id: 'concept-c',
  });
  sandbox.changeSchema(link, { kind: 'reword_question', position: 2, question: 'How do you do this today?' });
  sandbox.changeSchema(link, { kind: 'add_url_parameter', key: 'campaign', value: 'spring' });
  sandbox.changeSchema(link, { kind: 'set_field', place: 'response', name: 'sentiment_score', value: 0.5 });
  sandbox.changeSchema(link, { kind: 'set_field', place: 'transcript_row', name: 'tone', value: 'warm' });
  sandbox.changeSchema(link, { kind: 'set_field', place: 'study', name: 'archived', value: false });
  sandbox.addResponse(link);
  return link;
}

/** In the order of the study's question slots, then concepts, URL parameters, fields by place. */
const expectedKinds = [
  'question_reworded',
  'question_added',
  'concept_added',
  'url_parameter_added',
  'field_added',
  'field_added',
  'field_added',
];

describe('schema changes between two runs', () => {
  it('gives one entry, one event, a summary line and a report and codebook section per change; nothing for an unchanged study', async () => {
    await withTempDir(async (dir) => {
      const out = join(dir, 'out');
      const file = await pipelineFile(dir, out, 'warn');
      const first = await runAgainst(sandbox, sandboxConfig(sandbox, out));
      expect((await readManifest(first.runDir!)).schema_changes).toEqual([]);
      const studyIds = sandbox.studies().map((study) => study.id);
      const state = await readPipelineState(join(out, 'test'));
      // The first run records each study's schema and reports nothing.
      expect(state.studies[studyIds[0]!]?.schema?.questions).toHaveLength(6);

      const link = changeFirstStudy();
      // The second study has a new response too, of the same schema: nothing to report.
      const unchanged = sandbox.studies()[1]!.link_id;
      sandbox.addResponse(unchanged);
      const second = await run(file, '--log-format', 'json');
      expect(second.code, second.stderr).toBe(0);
      const events = second.stderr
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      const changeEvents = events.filter((event) => event.event === 'schema_change');
      const runDir = String(events.find((event) => event.event === 'summary')?.run_dir);
      const manifest = await readManifest(runDir);
      const changes = manifest.schema_changes as SchemaChange[];
      expect(changes.map((change) => change.kind)).toEqual(expectedKinds);
      expect(new Set(changes.map((change) => change.link_id))).toEqual(new Set([link]));
      expect(manifest.schema_changes_accepted).toBeUndefined();
      expect(changes).toContainEqual(
        expect.objectContaining({
          kind: 'question_reworded',
          discussion_guide_question_id: 'dg-2',
          concept_id: null,
          previous_question: 'How do you do this today, step by step?',
          question: 'How do you do this today?',
        }),
      );
      expect(changes).toContainEqual(
        expect.objectContaining({
          kind: 'question_added',
          discussion_guide_question_id: 'dg-9',
          question: 'Would you <b>buy</b> it?',
        }),
      );
      expect(changes).toContainEqual(
        expect.objectContaining({ kind: 'concept_added', concept_id: 'concept-c' }),
      );
      expect(changes).toContainEqual(
        expect.objectContaining({ kind: 'url_parameter_added', parameter: 'campaign' }),
      );
      expect(changes.filter((c) => c.kind === 'field_added').map((c) => [c.place, c.field, c.types])).toEqual(
        [
          ['study', 'archived', ['boolean']],
          ['response', 'sentiment_score', ['number']],
          ['transcript_row', 'tone', ['string']],
        ],
      );
      // One event per entry, with the same fields.
      expect(changeEvents.map(({ time: _t, event: _e, ...change }) => change)).toEqual(changes);
      expect(events.find((event) => event.event === 'summary')).toMatchObject({ schema_changes: 7 });
      // The summary: one line for the study, naming each change.
      const summary = second.stdout.split('\n');
      const line = summary.find((text) => text.startsWith(`  ${link}: `)) ?? '';
      for (const change of changes) expect(line).toContain(change.message);
      expect(summary.filter((text) => text.startsWith(`  ${unchanged}`))).toEqual([]);
      // report.html and the codebook: a section with each change, the service's text escaped.
      const report = await readFile(join(runDir, 'report.html'), 'utf8');
      const section = report.split('<h2 id="schema-changes">')[1]?.split('</section>')[0] ?? '';
      expect(section).toContain('Would you &lt;b&gt;buy&lt;/b&gt; it?');
      expect(section).not.toContain('<b>buy');
      expect((section.match(/<li>/g) ?? []).length).toBe(7);
      const codebook = await readFile(join(runDir, 'README.md'), 'utf8');
      const part = codebook.split('## Changes on the service since the last run')[1]?.split('\n## ')[0] ?? '';
      expect(part.match(/^- `[a-z_]+`: /gm)).toHaveLength(7);
      expect(part).toContain('`url_parameter_added`: URL parameter added: "campaign"');

      // The change is recorded: the next run, with another respondent, reports nothing new...
      sandbox.addResponse(link);
      const third = await runAgainst(sandbox, sandboxConfig(sandbox, out));
      expect((await readManifest(third.runDir!)).schema_changes).toEqual([]);
      // ...until a field's JSON type changes.
      sandbox.changeSchema(link, {
        kind: 'set_field',
        place: 'response',
        name: 'sentiment_score',
        value: 'positive',
      });
      sandbox.addResponse(link);
      const fourth = await runAgainst(sandbox, sandboxConfig(sandbox, out));
      expect((await readManifest(fourth.runDir!)).schema_changes).toEqual([
        expect.objectContaining({
          kind: 'field_type_changed',
          place: 'response',
          field: 'sentiment_score',
          types: ['string'],
          previous_types: ['number'],
          message: 'field "sentiment_score" of the response (list item) changed type: number → string',
        }),
      ]);
      // And what the service stops sending: a question slot, a URL parameter, the three fields.
      sandbox.changeSchema(link, { kind: 'drop_question', position: 1 });
      sandbox.changeSchema(link, { kind: 'drop_url_parameter', key: 'utm_source' });
      sandbox.changeSchema(link, { kind: 'unset_field', place: 'response', name: 'sentiment_score' });
      sandbox.changeSchema(link, { kind: 'unset_field', place: 'transcript_row', name: 'tone' });
      sandbox.changeSchema(link, { kind: 'unset_field', place: 'study', name: 'archived' });
      sandbox.addResponse(link);
      const fifth = await runAgainst(sandbox, sandboxConfig(sandbox, out));
      const gone = (await readManifest(fifth.runDir!)).schema_changes ?? [];
      expect(
        gone.map((c) => [c.kind, c.place ?? c.parameter ?? c.discussion_guide_question_id, c.field]),
      ).toEqual([
        ['question_gone', 'dg-1', undefined],
        ['url_parameter_gone', 'utm_source', undefined],
        ['field_gone', 'study', 'archived'],
        ['field_gone', 'response', 'sentiment_score'],
        ['field_gone', 'transcript_row', 'tone'],
      ]);
      expect(gone[0]?.question).toMatch(/^What first comes to mind when you think about /);
    });
  });
});

describe('schema.on_change: fail', () => {
  it('commits nothing and exits 4 naming every change; --accept-schema-change commits and records it', async () => {
    await withTempDir(async (dir) => {
      const out = join(dir, 'out');
      const root = join(out, 'test');
      const file = await pipelineFile(dir, out, 'fail');
      expect((await run(file)).code).toBe(0);
      const link = changeFirstStudy();
      // A sample (the first responses only) compares nothing and is never stopped.
      const sample = await run(file, '--limit', '2');
      expect(sample.code, sample.stderr).toBe(0);
      const sampleDir = /^sample run: (.+)$/m.exec(sample.stdout)?.[1] ?? '';
      expect((await readManifest(sampleDir)).schema_changes).toEqual([]);
      const before = {
        latest: await readFile(join(root, 'latest'), 'utf8'),
        state: await snapshot(join(root, 'state')),
        current: await snapshot(join(root, 'current')),
        runs: await readdir(join(root, 'runs')),
      };
      const stopped = await run(file);
      expect(stopped.code, stopped.stderr).toBe(4);
      expect(stopped.stderr).toMatch(
        /schema\.on_change is fail and the service changed since the last committed run \(7 changes in 1 study\); nothing was committed/,
      );
      const named = stopped.stderr.split('\n').filter((text) => text.startsWith(`  ${link} (`));
      expect(named.map((text) => /\): ([a-z_]+): /.exec(text)?.[1])).toEqual(expectedKinds);
      expect(stopped.stderr).toContain('--accept-schema-change');
      expect({
        latest: await readFile(join(root, 'latest'), 'utf8'),
        state: await snapshot(join(root, 'state')),
        current: await snapshot(join(root, 'current')),
        runs: await readdir(join(root, 'runs')),
      }).toEqual(before);

      // Stopped again on the next try: nothing was recorded.
      expect((await run(file)).code).toBe(4);
      const accepted = await run(file, '--accept-schema-change');
      expect(accepted.code, accepted.stderr).toBe(0);
      const runId = (await readFile(join(root, 'latest'), 'utf8')).trim();
      expect(runId).not.toBe(before.latest.trim());
      const manifest = await readManifest(join(root, 'runs', runId));
      expect(manifest.schema_changes_accepted).toBe(true);
      expect((manifest.schema_changes ?? []).map((change) => change.kind)).toEqual(expectedKinds);
      expect(await readFile(join(root, 'runs', runId, 'report.html'), 'utf8')).toContain(
        '--accept-schema-change',
      );
      // Now recorded: a further respondent of the changed study passes under fail.
      sandbox.addResponse(link);
      expect((await run(file)).code).toBe(0);
    });
  });
});
