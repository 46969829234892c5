/**
 * Runs against a service whose response list is sorted by updated_at and is edited between two
 * page requests (an early response moves to the end, every later one back one place): every
 * response reaches the run and current/, or the study is partial (exit 3), its watermark holds
 * and the next run completes it. A list that does not move costs the requests it always did.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Study } from '../../src/api/resources.ts';
import { silentReporter } from '../../src/pipeline/progress.ts';
import { readPipelineState } from '../../src/publish/state.ts';
import { replayRun } from '../../src/replay/index.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { currentKeys } from '../helpers/current.ts';
import { type EditingProxy, type PageRequest, startEditingProxy } from '../helpers/editing-proxy.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readManifest, runAgainst, sandboxConfig } from '../helpers/run.ts';
import { expectEveryResponseOnce, sandboxResponseIds } from '../helpers/run-files.ts';

const perPage = 10;

/**
 * Edits one study's list between its page requests: `once`, its first response before the
 * first page after page 0; `always`, before every page but page 0 of each pass over the pages.
 * The edited response gets the newest updated_at, so it moves to the end of the list.
 */
class ListEditor {
  #mode: 'off' | 'once' | 'always' = 'off';
  #linkId = '';
  /** The list's order as the service has it, kept as each edit changes it. */
  #order: string[] = [];
  edits = 0;

  constructor(private readonly sandbox: Sandbox) {}

  async arm(mode: 'once' | 'always', study: Study, since?: string): Promise<void> {
    const query = since === undefined ? '' : `&updated_since=${encodeURIComponent(since)}`;
    const url = `${this.sandbox.base_url}/api/public/responses/${encodeURIComponent(study.link_id)}?per_page=1000${query}`;
    const reply = await fetch(url, { headers: { 'x-api-key': this.sandbox.api_key } });
    this.#order = ((await reply.json()) as { id: string }[]).map((item) => item.id);
    this.#linkId = study.link_id;
    this.#mode = mode;
  }

  disarm(): void {
    this.#mode = 'off';
  }

  onPage(request: PageRequest): void {
    if (this.#mode === 'off' || request.linkId !== this.#linkId || request.page === 0) return;
    if (this.#mode === 'once') this.#mode = 'off';
    const first = this.#order.shift() as string;
    this.#order.push(first);
    this.edits += 1;
    this.sandbox.touchResponse(this.#linkId, first, new Date(this.sandbox.clock.now() + 1_000 + this.edits));
  }
}

let sandbox: Sandbox;
let proxy: EditingProxy;
let editor: ListEditor;
beforeEach(async () => {
  // Three studies, two of them seen by the primary key.
  sandbox = await startSandbox({ seed: 12, studies: 3, responses: 30, responseOrder: 'updated_at' });
  editor = new ListEditor(sandbox);
  proxy = await startEditingProxy(sandbox, (request) => editor.onPage(request));
});
afterEach(async () => {
  await proxy.close();
  await sandbox.close();
});

/** A run through the proxy, pages of 10, CSV and Parquet, no media. */
function exportVia(out: string, overrides: { full?: boolean } = {}) {
  const config = sandboxConfig({ ...sandbox, base_url: proxy.url }, out, { source: { per_page: perPage } });
  return runAgainst(sandbox, config, overrides);
}

const pipelineDir = (out: string) => join(out, 'test');

async function expectCurrentWhole(out: string): Promise<void> {
  const { responseIds, repeated } = await currentKeys(join(pipelineDir(out), 'current'));
  expect(responseIds).toEqual(sandboxResponseIds(sandbox).sort());
  expect(Object.values(repeated).every((n) => n === 0)).toBe(true);
}

async function watermarks(out: string): Promise<Record<string, string | null | undefined>> {
  const state = await readPipelineState(pipelineDir(out));
  return Object.fromEntries(sandbox.studies().map((s) => [s.link_id, state.studies[s.id]?.watermark]));
}

/** 25 of the study's responses changed after the last run, one after the other. */
function changeSome(study: Study): string[] {
  const ids = sandbox.responses(study.link_id).map((r) => r.id);
  const changed = ids.slice(2, 27);
  const at = sandbox.clock.now();
  for (const [i, id] of changed.entries()) sandbox.touchResponse(study.link_id, id, new Date(at + i));
  return changed;
}

describe("a run while the service's list moves under the pager", () => {
  it('full: an early response edited between two pages; every response reaches the run and current/', async () => {
    await withTempDir(async (out) => {
      const [study] = sandbox.studies();
      await editor.arm('once', study!);
      const result = await exportVia(out);
      expect(editor.edits).toBe(1);
      expect(result.status).toBe('complete');
      await expectEveryResponseOnce(result.runDir!, sandboxResponseIds(sandbox));
      const manifest = await readManifest(result.runDir!);
      expect(manifest.warnings.map((w) => w.code)).toEqual(['listing_moved']);
      expect(manifest.warnings[0]).toMatchObject({ link_id: study!.link_id });
      await expectCurrentWhole(out);
      expect(Object.values(await watermarks(out)).every((mark) => typeof mark === 'string')).toBe(true);

      // raw/ holds both passes over the pages: a replay pages as the run did, and finds them all.
      const replayed = await replayRun({
        runDir: result.runDir!,
        out: join(out, 'replayed'),
        reporter: silentReporter,
        env: {},
      });
      expect(replayed.status).toBe('complete');
      await expectEveryResponseOnce(replayed.runDir!, sandboxResponseIds(sandbox));
      expect((await readManifest(replayed.runDir!)).warnings.map((w) => w.code)).toEqual(['listing_moved']);

      // A --full run replaces each study's rows in current/: a response no page served would go.
      await editor.arm('once', study!);
      const full = await exportVia(out, { full: true });
      expect(full.status).toBe('complete');
      await expectEveryResponseOnce(full.runDir!, sandboxResponseIds(sandbox));
      await expectCurrentWhole(out);
    });
  });

  it('incremental: an old change displaced by a new edit reaches the run and current/', async () => {
    await withTempDir(async (out) => {
      await exportVia(out);
      const [study] = sandbox.studies();
      const changed = changeSome(study!);
      const before = await watermarks(out);
      await editor.arm('once', study!, before[study!.link_id]!);
      const result = await exportVia(out);
      expect(editor.edits).toBe(1);
      expect(result.status).toBe('complete');
      await expectEveryResponseOnce(result.runDir!, changed);
      const manifest = await readManifest(result.runDir!);
      expect(manifest.warnings.map((w) => w.code)).toEqual(['listing_moved']);
      await expectCurrentWhole(out);
      const after = await watermarks(out);
      expect(after[study!.link_id]).not.toBe(before[study!.link_id]);
    });
  });

  it('full, a list that keeps moving: the study is partial, holds no watermark, and the next run completes it', async () => {
    await withTempDir(async (out) => {
      const [study, other] = sandbox.studies();
      await editor.arm('always', study!);
      const result = await exportVia(out);
      expect(result.status).toBe('partial');
      const manifest = await readManifest(result.runDir!);
      expect(manifest.warnings.map((w) => w.code)).toEqual(['listing_unsettled']);
      expect(manifest.warnings[0]!.message).toMatch(/the study's watermark holds/);
      expect(manifest.studies.find((s) => s.study_id === study!.id)).toMatchObject({ lossless: false });
      expect(manifest.studies.find((s) => s.study_id === other!.id)).toMatchObject({ lossless: true });
      const marks = await watermarks(out);
      expect(marks[study!.link_id]).toBeUndefined();
      expect(typeof marks[other!.link_id]).toBe('string');

      editor.disarm();
      const next = await exportVia(out);
      expect(next.status).toBe('complete');
      // Listed in full again (no watermark): every response of the study.
      await expectEveryResponseOnce(next.runDir!, sandboxResponseIds(sandbox, [study!.link_id]));
      const listed = (await readManifest(next.runDir!)).studies.find((s) => s.study_id === study!.id);
      expect(listed).toMatchObject({ since: null, lossless: true });
      await expectCurrentWhole(out);
      expect(typeof (await watermarks(out))[study!.link_id]).toBe('string');
    });
  });

  it('incremental, a list that keeps moving: partial, its watermark holds, the next run lists from it', async () => {
    await withTempDir(async (out) => {
      await exportVia(out);
      const [study, other] = sandbox.studies();
      const changed = changeSome(study!);
      const before = await watermarks(out);
      await editor.arm('always', study!, before[study!.link_id]!);
      const result = await exportVia(out);
      expect(result.status).toBe('partial');
      expect((await readManifest(result.runDir!)).warnings.map((w) => w.code)).toEqual(['listing_unsettled']);
      const held = await watermarks(out);
      expect(held[study!.link_id]).toBe(before[study!.link_id]);
      expect(held[other!.link_id]).not.toBe(before[other!.link_id]);

      editor.disarm();
      const next = await exportVia(out);
      expect(next.status).toBe('complete');
      const manifest = await readManifest(next.runDir!);
      expect(manifest.studies.find((s) => s.study_id === study!.id)?.since).toBe(before[study!.link_id]);
      // Every change since the held watermark (the edits made while the last run paged were to them).
      await expectEveryResponseOnce(next.runDir!, changed);
      await expectCurrentWhole(out);
    });
  });

  it('a list that does not move: each listing asks for its pages once, as it always has', async () => {
    await withTempDir(async (out) => {
      expect(sandbox.studies()).toHaveLength(2);
      const first = await exportVia(out);
      // Per study: three pages of ten and the empty page that ends the listing.
      expect(proxy.pages()).toBe(2 * 4);
      const requests = (await readManifest(first.runDir!)).requests as {
        requests: Record<string, Record<string, number>>;
      };
      expect(requests.requests.list_responses).toEqual({ 200: 2 * 4 });
      expect(requests.requests.get_response).toEqual({ 200: 60 });

      const [study] = sandbox.studies();
      changeSome(study!);
      const second = await exportVia(out);
      expect(second.status).toBe('complete');
      // The changed study: pages 0 to 2 (25 responses), the empty page 3; the other: page 0.
      expect(proxy.pages()).toBe(2 * 4 + 4 + 1);
      const manifest = await readManifest(second.runDir!);
      expect(manifest.warnings).toEqual([]);
    });
  });
});
