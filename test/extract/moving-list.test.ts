/**
 * A list that moves while it is paged (src/extract/listing-passes.ts), against the sandbox
 * sorted by updated_at behind a proxy that edits it between two page requests: every response
 * is listed, or the listing says it is incomplete; a list that does not move costs no request
 * more than paging it once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/client.ts';
import type { Study } from '../../src/api/resources.ts';
import { listResponses } from '../../src/extract/index.ts';
import { MAX_PASSES } from '../../src/extract/listing-passes.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { type EditingProxy, type PageRequest, startEditingProxy } from '../helpers/editing-proxy.ts';
import { collect, memorySinks, sandboxClient } from '../helpers/extract.ts';

const opened: { sandbox: Sandbox; proxy: EditingProxy; client: ApiClient }[] = [];
afterEach(async () => {
  for (const { sandbox, proxy, client } of opened.splice(0)) {
    client.close();
    await proxy.close();
    await sandbox.close();
  }
});

const perPage = 10;

/** A study of 30 responses sorted by updated_at, paged through `edit`; its ids in list order. */
async function setup(edit: (request: PageRequest, sandbox: Sandbox, study: Study) => void) {
  const sandbox = await startSandbox({ seed: 5, studies: 1, responses: 30, responseOrder: 'updated_at' });
  const study = sandbox.studies()[0]!;
  const proxy = await startEditingProxy(sandbox, (request) => edit(request, sandbox, study));
  const client = sandboxClient(sandbox, { baseUrl: proxy.url });
  opened.push({ sandbox, proxy, client });
  return { sandbox, study, proxy, client, sinks: memorySinks() };
}

/** The ids the list serves now, in its order (unpaged, through the sandbox itself). */
async function listOrder(sandbox: Sandbox, study: Study, query = ''): Promise<string[]> {
  const url = `${sandbox.base_url}/api/public/responses/${encodeURIComponent(study.link_id)}?per_page=1000${query}`;
  const reply = await fetch(url, { headers: { 'x-api-key': sandbox.api_key } });
  return ((await reply.json()) as { id: string }[]).map((item) => item.id);
}

/** Ids on the pages of the first pass (its pages until the first empty one), from raw/. */
function firstPassIds(records: { payload: unknown }[]): Set<string> {
  const ids = new Set<string>();
  for (const record of records) {
    const items = record.payload as { id: string }[];
    if (items.length === 0) break;
    for (const item of items) ids.add(item.id);
  }
  return ids;
}

describe('a list that moves while it is paged', () => {
  it('an early response edited between two pages: the one it displaced is found by a second pass', async () => {
    let order: string[] = [];
    const { sandbox, study, client, proxy, sinks } = await setup((request, sandbox, study) => {
      if (request.page === 1 && request.before === 1) sandbox.touchResponse(study.link_id, order[0]!);
    });
    order = await listOrder(sandbox, study);
    // One invalid item: recorded once, whatever the passes.
    sandbox.mutateListItem(study.link_id, order[20]!, (item) => ({ ...item, short_transcript: 42 }));
    const listing = listResponses(client, study, { perPage, includeInProgress: true }, sinks);
    const ids = (await collect(listing)).map((r) => r.id);
    // Paged once, the response at the page boundary was served by no page.
    const displaced = order[perPage]!;
    expect(firstPassIds(sinks.rawRecords).has(displaced)).toBe(false);
    expect(ids.sort()).toEqual(order.filter((id) => id !== order[20]).sort());
    expect(sinks.rejected.map((r) => r.response_id)).toEqual([order[20]]);
    expect(listing.stats).toMatchObject({ passes: 2, pages: 8, unique: 29, rejected: 1 });
    expect(listing.stats.stoppedBy).toBe('empty_page');
    expect(proxy.pages()).toBe(8);
    expect(sinks.warnings.map((w) => w.code)).toEqual(['listing_moved']);
    expect(sinks.warnings[0]!.message).toMatch(
      new RegExp(
        `response "${order[0]}" served twice; 29 responses found of the 30 its desc declares\\): paged it again .* 2 passes in all; 1 responses were found only by a later pass`,
      ),
    );
  });

  it('an incremental listing: an old change displaced by a new edit is found by a second pass', async () => {
    let changed: string[] = [];
    const base = Date.now() + 60_000;
    const { sandbox, study, client, sinks } = await setup((request, sandbox, study) => {
      if (request.page === 1 && request.before === 1)
        sandbox.touchResponse(study.link_id, changed[0]!, new Date(base + 1_000));
    });
    const order = await listOrder(sandbox, study);
    const since = new Date(sandbox.clock.now()).toISOString();
    // 25 responses changed after the watermark, one after the other.
    for (const [i, id] of order.slice(0, 25).entries())
      sandbox.touchResponse(study.link_id, id, new Date(base + i));
    changed = await listOrder(sandbox, study, `&updated_since=${since}`);
    expect(changed).toEqual(order.slice(0, 25));
    const listing = listResponses(
      client,
      study,
      { perPage, includeInProgress: true, updatedSince: since },
      sinks,
    );
    const ids = (await collect(listing)).map((r) => r.id);
    expect(firstPassIds(sinks.rawRecords).has(changed[perPage]!)).toBe(false);
    expect(ids.sort()).toEqual([...changed].sort());
    expect(listing.stats).toMatchObject({ passes: 2, stoppedBy: 'empty_page' });
    expect(sinks.warnings.map((w) => w.code)).toEqual(['listing_moved']);
  });

  it('a list that keeps moving through every pass is incomplete: stopped with a warning', async () => {
    let current: string[] = [];
    let edits = 0;
    const { sandbox, study, client, proxy, sinks } = await setup((request, sandbox, study) => {
      // Before every page but the first of a pass, the list's first response is edited.
      if (request.page === 0) return;
      const first = current.shift()!;
      current.push(first);
      edits += 1;
      sandbox.touchResponse(study.link_id, first, new Date(sandbox.clock.now() + edits));
    });
    current = await listOrder(sandbox, study);
    const listing = listResponses(client, study, { perPage, includeInProgress: true }, sinks);
    await collect(listing);
    expect(listing.stats).toMatchObject({ passes: MAX_PASSES, stoppedBy: 'list_moving' });
    expect(proxy.pages()).toBe(MAX_PASSES * 4);
    expect(sinks.warnings.map((w) => w.code)).toEqual(['listing_unsettled']);
    expect(sinks.warnings[0]!.message).toMatch(
      /kept moving .* through 4 passes .* the study's watermark holds/,
    );
  });

  it('a response deleted between two pages: the count falls short of the desc, a second pass finds the one skipped', async () => {
    let order: string[] = [];
    const { sandbox, study, client, sinks } = await setup((request, sandbox, study) => {
      if (request.page === 1 && request.before === 1) sandbox.deleteResponse(study.link_id, order[3]!);
    });
    order = await listOrder(sandbox, study);
    const listing = listResponses(client, study, { perPage, includeInProgress: true }, sinks);
    const ids = (await collect(listing)).map((r) => r.id);
    expect(firstPassIds(sinks.rawRecords).has(order[perPage]!)).toBe(false);
    // The deleted response was listed before it went; its detail is the details stage's affair.
    expect(ids.sort()).toEqual([...order].sort());
    expect(listing.stats).toMatchObject({ passes: 2, stoppedBy: 'empty_page' });
    expect(sinks.warnings.map((w) => w.code)).toEqual(['listing_moved']);
    expect(sinks.warnings[0]!.message).toContain('29 responses found of the 30 its desc declares');
  });

  it('a list that does not move is paged once: no request more than before', async () => {
    const { study, client, proxy, sinks } = await setup(() => {});
    const listing = listResponses(client, study, { perPage, includeInProgress: true }, sinks);
    expect(await collect(listing)).toHaveLength(30);
    // Three pages of ten and the empty one that ends the listing, as paging once has always asked.
    expect(proxy.pages()).toBe(4);
    expect(listing.stats).toMatchObject({ passes: 1, pages: 4 });
    const since = '2000-01-01T00:00:00Z';
    const incremental = listResponses(
      client,
      study,
      { perPage, includeInProgress: true, updatedSince: since },
      sinks,
    );
    await collect(incremental);
    expect(incremental.stats).toMatchObject({ passes: 1, pages: 4 });
    expect(proxy.pages()).toBe(8);
    expect(sinks.warnings).toEqual([]);
  });

  it('a desc that counts more than a still list holds: paged twice, then the count warning alone', async () => {
    const { study, client, proxy, sinks } = await setup(() => {});
    const overcounted = { ...study, desc: `${study.title} (33 Responses)` };
    const listing = listResponses(client, overcounted, { perPage, includeInProgress: true }, sinks);
    expect(await collect(listing)).toHaveLength(30);
    expect(listing.stats).toMatchObject({ passes: 2, stoppedBy: 'empty_page' });
    expect(proxy.pages()).toBe(8);
    expect(sinks.warnings.map((w) => w.code)).toEqual(['response_count_mismatch']);
    expect(sinks.warnings[0]!.message).toContain(
      "found 30 responses (30 valid, 0 rejected, on 2 passes over the pages) but the study's desc says 33",
    );
  });

  it('a still list that serves one id twice each time: paged twice, the newest copy kept, a warning', async () => {
    const { sandbox, study, client, sinks } = await setup(() => {});
    const order = await listOrder(sandbox, study);
    const [twice, shadow] = [order[3]!, order[17]!];
    sandbox.mutateListItem(study.link_id, shadow, (item) => ({ ...item, id: twice }));
    const listing = listResponses(client, study, { perPage, includeInProgress: true }, sinks);
    const ids = (await collect(listing)).map((r) => r.id);
    expect(ids.sort()).toEqual(order.filter((id) => id !== shadow).sort());
    expect(listing.stats).toMatchObject({ passes: 2, stoppedBy: 'empty_page' });
    expect(sinks.warnings.map((w) => w.code)).toEqual(['response_listed_twice', 'response_count_mismatch']);
    expect(sinks.warnings[0]!.message).toContain(`response "${twice}" twice on every pass`);
  });
});
