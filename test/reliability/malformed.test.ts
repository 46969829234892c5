/**
 * Malformed payloads end to end, through the command line: missing fields, wrong types,
 * arrays where objects belong, an HTML error page with status 200, a list page that is not
 * JSON. Each lands in rejects.jsonl (raw, with a reason naming the field) or is retried and
 * then reported; the run exits 3; the damaged studies' watermarks hold, so a later run
 * fetches what they lost.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import { readPipelineState } from '../../src/publish/state.ts';
import type { Reject } from '../../src/records.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readManifest, runAgainst, sandboxConfig } from '../helpers/run.ts';
import {
  cliPipeline,
  expectEveryResponseOnce,
  expectNoSecretIn,
  expectNoSecretInText,
  readRejects,
  responseIdsOf,
} from '../helpers/run-files.ts';

let sandbox: Sandbox;

beforeAll(async () => {
  // Nine studies: the primary key sees eight, one per case and one left intact.
  sandbox = await startSandbox({ seed: 51, studies: 9, responses: 3 });
});
afterAll(async () => {
  await sandbox.close();
});

type Case = {
  name: string;
  /** Breaks the study's victim response (or the requests for it). */
  breakIt: (linkId: string, responseId: string) => void;
  /** list: the item is rejected (not in responses); detail: the response stays, its detail is rejected; study: the study fails. */
  rejected: 'list' | 'detail' | 'study';
  reason: RegExp;
  raw?: (raw: unknown) => void;
};

const RETRIES = 1;
const htmlPage = '<!doctype html><html><body><h1>502 Bad Gateway</h1></body></html>';

const cases: Case[] = [
  {
    name: 'list item without created_at',
    breakIt: (link, id) =>
      sandbox.mutateListItem(link, id, (item) => {
        const { created_at: _, ...rest } = item;
        return rest;
      }),
    rejected: 'list',
    reason: /created_at/,
    raw: (raw) => expect(raw).not.toHaveProperty('created_at'),
  },
  {
    name: 'list item with a number for short_transcript',
    breakIt: (link, id) => sandbox.mutateListItem(link, id, (item) => ({ ...item, short_transcript: 42 })),
    rejected: 'list',
    reason: /short_transcript/,
    raw: (raw) => expect(raw).toHaveProperty('short_transcript', 42),
  },
  {
    name: 'list item with an array for attributes',
    breakIt: (link, id) => sandbox.mutateListItem(link, id, (item) => ({ ...item, attributes: ['utm'] })),
    rejected: 'list',
    reason: /attributes/,
    raw: (raw) => expect(raw).toHaveProperty('attributes', ['utm']),
  },
  {
    name: 'detail with a string for transcript',
    breakIt: (link, id) => sandbox.mutateDetail(link, id, (detail) => ({ ...detail, transcript: 'none' })),
    rejected: 'detail',
    reason: /transcript/,
    raw: (raw) => expect(raw).toHaveProperty('transcript', 'none'),
  },
  {
    name: 'detail that is an array',
    breakIt: (link, id) => sandbox.mutateDetail(link, id, (detail) => [detail]),
    rejected: 'detail',
    reason: /\(root\).*(object|array)/,
    raw: (raw) => expect(Array.isArray(raw)).toBe(true),
  },
  {
    name: 'detail answered by an HTML error page with status 200',
    breakIt: (link, id) =>
      sandbox.overrideNext(
        { listener: 'api', pathIncludes: `/${link}/${id}` },
        { status: 200, contentType: 'text/html', body: htmlPage },
        RETRIES + 1,
      ),
    rejected: 'detail',
    reason: /not JSON/,
  },
  {
    name: 'list page that is not JSON',
    breakIt: (link) =>
      sandbox.overrideNext(
        { listener: 'api', pathIncludes: `/${link}?` },
        { status: 200, contentType: 'text/plain', body: 'Service temporarily unavailable' },
        RETRIES + 1,
      ),
    rejected: 'study',
    reason: /not JSON/,
  },
];

it('every malformed payload is a reject naming the field or a reported failure; exit 3; watermarks hold', async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, 'out');
    const studies = sandbox.studies();
    expect(studies).toHaveLength(cases.length + 1);
    const settings = { source: { retries: RETRIES } };
    const first = await runAgainst(sandbox, sandboxConfig(sandbox, out, settings));
    expect(first.status).toBe('complete');
    const pipelineDir = join(out, 'test');
    const stateBefore = await readPipelineState(pipelineDir);

    // One victim per study; touched so that the incremental run lists it again.
    const victims = studies.map((study) => ({ study, id: sandbox.responses(study.link_id)[1]!.id }));
    for (const { study, id } of victims) sandbox.touchResponse(study.link_id, id, new Date());
    for (const [i, c] of cases.entries()) c.breakIt(victims[i]!.study.link_id, victims[i]!.id);

    const { run } = await cliPipeline(sandbox, dir, 'test', { source: { retries: RETRIES } });
    const { runDir: absoluteRunDir, ...cli } = await run();
    expect(cli.code, cli.stderr).toBe(3);
    expect(cli.stdout).toContain('partial');
    expectNoSecretInText(cli.stdout + cli.stderr, sandbox.api_key);
    expect(cli.stdout).toMatch(/^run: /m);

    const rejects = await readRejects(absoluteRunDir);
    const manifest = await readManifest(absoluteRunDir);
    const exported = new Set(await responseIdsOf(absoluteRunDir));
    cases.forEach((c, i) => {
      const { study, id } = victims[i]!;
      const outcome = manifest.studies.find((s) => s.study_id === study.id);
      if (c.rejected === 'study') {
        // Retried, then reported: the study failed with a reason, the rest of the run went on.
        expect(outcome?.error, c.name).toMatch(c.reason);
        expect(outcome?.error).toContain(study.link_id);
        expect(manifest.warnings.some((w) => w.code === 'study_failed' && w.study_id === study.id)).toBe(
          true,
        );
        expect(exported.has(id), c.name).toBe(false);
        return;
      }
      const mine = rejects.filter((r: Reject) => r.response_id === id);
      expect(mine, c.name).toHaveLength(1);
      expect(mine[0]!.reason, c.name).toMatch(c.reason);
      expect(mine[0]!.operation).toBe(c.rejected === 'list' ? 'list_responses' : 'get_response');
      expect(mine[0]!.study_id).toBe(study.id);
      c.raw?.(mine[0]!.raw);
      expect(exported.has(id), c.name).toBe(c.rejected === 'detail');
      expect(outcome?.lossless, c.name).toBe(false);
    });
    expect(rejects).toHaveLength(cases.filter((c) => c.rejected !== 'study').length);
    // The intact study's victim is exported; nothing appears twice.
    const intact = victims[cases.length]!;
    const listedVictims = victims.filter((_, i) => cases[i]?.rejected !== 'study').map((v) => v.id);
    await expectEveryResponseOnce(absoluteRunDir, listedVictims);
    expect(exported.has(intact.id)).toBe(true);
    expect((await verifyRun(absoluteRunDir)).problems).toEqual([]);

    // Watermarks: held for every damaged study, advanced for the intact one.
    const stateAfter = await readPipelineState(pipelineDir);
    cases.forEach((c, i) => {
      const studyId = victims[i]!.study.id;
      expect(stateAfter.studies[studyId], c.name).toEqual(stateBefore.studies[studyId]);
    });
    expect(stateAfter.studies[intact.study.id]?.last_run).toBe(manifest.run_id);

    // Repaired, the next incremental run brings every victim in, once.
    for (const [i, c] of cases.entries()) {
      const { study, id } = victims[i]!;
      if (c.rejected === 'list') sandbox.mutateListItem(study.link_id, id, (item) => item);
      if (c.rejected === 'detail') sandbox.mutateDetail(study.link_id, id, (detail) => detail);
    }
    const repaired = await runAgainst(sandbox, sandboxConfig(sandbox, out, settings));
    expect(repaired.status).toBe('complete');
    const repairedIds = await responseIdsOf(repaired.runDir!);
    for (const { id } of victims.slice(0, cases.length)) expect(repairedIds).toContain(id);
    expect(new Set(repairedIds).size).toBe(repairedIds.length);
    await expectNoSecretIn(out, sandbox.api_key);
    expect(await readFile(join(absoluteRunDir, 'manifest.json'), 'utf8')).not.toContain(sandbox.api_key);
  });
});
