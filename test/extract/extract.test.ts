import pLimit from 'p-limit';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/client.ts';
import type { ListedResponse, Study } from '../../src/api/resources.ts';
import { AuthError, PayloadError } from '../../src/errors.ts';
import {
  fetchDetails,
  listResponses,
  listStudies,
  type PageGate,
  selectStudies,
} from '../../src/extract/index.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { collect, type MemorySinks, memorySinks, sandboxClient, sortedJson } from '../helpers/extract.ts';

const opened: { sandbox: Sandbox; clients: ApiClient[] }[] = [];
afterEach(async () => {
  for (const { sandbox, clients } of opened.splice(0)) {
    for (const client of clients) client.close();
    await sandbox.close();
  }
});

async function setup(options: Parameters<typeof startSandbox>[0], clientOptions = {}) {
  const sandbox = await startSandbox(options);
  const client = sandboxClient(sandbox, clientOptions);
  opened.push({ sandbox, clients: [client] });
  return { sandbox, client, sinks: memorySinks() };
}

const listing = { perPage: 1000, includeInProgress: true };

/** Makes raw/'s drained() wait until the returned release() is called. */
function holdRaw(sinks: MemorySinks): () => void {
  let release = () => {};
  const holding = new Promise<void>((resolve) => {
    release = resolve;
  });
  sinks.raw.drained = () => holding;
  return release;
}

/** Everything one export extracts: every study's listed responses and details. */
async function extractAll(client: ApiClient, sinks: MemorySinks) {
  const studies = await listStudies(client, sinks);
  const listed: ListedResponse[] = [];
  const details: unknown[] = [];
  for (const study of studies) {
    const listedHere = listResponses(client, study, listing, sinks);
    for await (const result of fetchDetails(client, study, listedHere, sinks, { window: 6 })) {
      listed.push(result.listed);
      details.push(result.detail);
    }
  }
  return {
    studies: sortedJson(studies, (s) => s.id),
    listed: sortedJson(listed, (r) => r.id),
    details: sortedJson(details, (d) => (d as { id: string }).id).map(withoutSignedUrlParts),
  };
}

/** Signed media URLs differ between two sandboxes (ports, expiry, signature); their paths do not. */
function withoutSignedUrlParts(json: string): string {
  return json.replace(/http:\/\/127\.0\.0\.1:\d+([^"?]*)\?[^"]*/g, '$1');
}

function studyByLinkId(sandbox: Sandbox, linkId: string): Study {
  const study = sandbox.studies().find((s) => s.link_id === linkId);
  if (!study) throw new Error(`no study ${linkId}`);
  return study;
}

describe('extract against the sandbox', () => {
  it('with faults and per_page capped at 7, extracts exactly the fault-free set', async () => {
    const clean = await setup({ seed: 3, studies: 4, responses: 30 });
    const expected = await extractAll(clean.client, clean.sinks);
    expect(expected.listed.length).toBeGreaterThan(0);
    expect(clean.sinks.rejected).toEqual([]);

    const faulty = await setup(
      {
        seed: 3,
        studies: 4,
        responses: 30,
        maxPerPage: 7,
        faults: '5xx=0.1,429=0.05,reset=0.02,truncate=0.02',
      },
      { concurrency: 6 },
    );
    const actual = await extractAll(faulty.client, faulty.sinks);
    expect(actual.studies).toEqual(expected.studies);
    expect(actual.listed).toEqual(expected.listed);
    expect(actual.details).toEqual(expected.details);
    expect(faulty.sinks.rejected).toEqual([]);
    expect(faulty.sinks.warnings).toEqual([]);

    // The faults happened, were retried, and every attempt is accounted for.
    const snapshot = faulty.client.counters.snapshot();
    const apiRequests = faulty.sandbox.requests.filter((r) => r.listener === 'api');
    const counted = Object.values(snapshot.requests).flatMap((byStatus) => Object.values(byStatus));
    expect(counted.reduce((a, b) => a + b, 0)).toBe(apiRequests.length);
    const ok = Object.values(snapshot.requests).reduce((sum, byStatus) => sum + (byStatus['200'] ?? 0), 0);
    const sandboxOk = apiRequests.filter((r) => r.status === 200).length;
    // A truncated 200 is logged by the sandbox as 200 but counted by the client as a read error.
    expect(ok).toBeLessThanOrEqual(sandboxOk);
    const retries = Object.values(snapshot.retries).reduce((a, b) => a + b, 0);
    expect(retries).toBeGreaterThan(0);
    expect(retries).toBe(apiRequests.length - ok);
    // Short pages did not stop paging: n responses at 7 per page is ceil(n / 7) + 1 pages, the last empty.
    const pages = faulty.sinks.rawRecords.filter((r) => r.operation === 'list_responses');
    const visible = faulty.sandbox.studies();
    const expectedPages = visible.reduce(
      (sum, study) => sum + Math.ceil(faulty.sandbox.responses(study.link_id).length / 7) + 1,
      0,
    );
    expect(pages.length).toBe(expectedPages);
    expect(pages.every((page) => (page.payload as unknown[]).length <= 7)).toBe(true);
  });

  it('stops on an empty page, never on a short one', async () => {
    const { sandbox, client, sinks } = await setup({ seed: 5, studies: 1, responses: 20, maxPerPage: 7 });
    const study = sandbox.studies()[0]!;
    const result = listResponses(client, study, { perPage: 1000, includeInProgress: true }, sinks);
    const items = await collect(result);
    expect(items.map((r) => r.id)).toEqual(sandbox.responses(study.link_id).map((r) => r.id));
    expect(result.stats).toMatchObject({ pages: 4, listed: 20, unique: 20, stoppedBy: 'empty_page' });
    const sizes = sinks.rawRecords.map((r) => (r.payload as unknown[]).length);
    expect(sizes).toEqual([7, 7, 6, 0]);
    expect(sinks.rawRecords.map((r) => r.query?.page)).toEqual(['0', '1', '2', '3']);
    expect(sinks.warnings).toEqual([]);
  });

  it('listings sharing a page gate hold one page at a time, and each still lists everything', async () => {
    const { sandbox, client } = await setup({
      seed: 5,
      studies: 3,
      responses: 20,
      maxPerPage: 7,
      latencyMs: 5,
    });
    const studies = sandbox.studies().filter((s) => sandbox.responses(s.link_id).length > 0);
    expect(studies.length).toBeGreaterThan(1);

    /** Lists every study side by side; returns the most pages that were being taken at once. */
    async function listSideBySide(gate?: PageGate) {
      let taking = 0;
      let most = 0;
      const counted: PageGate = async (expected, takePage) => {
        const run = async () => {
          most = Math.max(most, ++taking);
          try {
            return await takePage();
          } finally {
            taking--;
          }
        };
        return gate ? gate(expected, run) : run();
      };
      const listed = await Promise.all(
        studies.map((study) =>
          collect(listResponses(client, study, { ...listing, pageGate: counted }, memorySinks())),
        ),
      );
      for (const [i, study] of studies.entries()) {
        expect(listed[i]?.map((r) => r.id)).toEqual(sandbox.responses(study.link_id).map((r) => r.id));
      }
      return most;
    }

    expect(await listSideBySide()).toBeGreaterThan(1); // without a gate, pages overlap
    const onePage = pLimit(1);
    expect(await listSideBySide((_expected, takePage) => onePage(takePage))).toBe(1);
  });

  it("each page passes the gate with the responses its study's desc says are still to come, at most a page", async () => {
    const { sandbox, client, sinks } = await setup({ seed: 5, studies: 1, responses: 20, maxPerPage: 7 });
    const study = sandbox.studies()[0]!;
    const total = sandbox.responses(study.link_id).length;
    expect(total).toBeGreaterThan(7);
    const expectations: number[] = [];
    const recording: PageGate = (expected, takePage) => {
      expectations.push(expected);
      return takePage();
    };
    await collect(listResponses(client, study, { ...listing, pageGate: recording }, sinks));
    // Pages of 7 until an empty one; the empty page still weighs one response.
    const seenBefore = Array.from({ length: Math.ceil(total / 7) + 1 }, (_, page) =>
      Math.min(total, page * 7),
    );
    expect(expectations).toEqual(seenBefore.map((seen) => Math.max(total - seen, 1)));
    const small = await collect(
      listResponses(client, study, { perPage: 5, includeInProgress: true, pageGate: recording }, sinks),
    );
    expect(small).toHaveLength(total);
    expect(Math.max(...expectations.slice(seenBefore.length))).toBe(5); // never more than a page
    const undeclared = { ...study, desc: 'no count here' };
    expectations.length = 0;
    await collect(listResponses(client, undeclared, { ...listing, pageGate: recording }, sinks));
    expect(new Set(expectations)).toEqual(new Set([1000])); // a full page each
  });

  it('a page with an element that is not JSON fails the listing, naming the page and the element, and stays out of raw/', async () => {
    const { sandbox, client, sinks } = await setup({ seed: 5, studies: 1, responses: 20, maxPerPage: 7 });
    const study = sandbox.studies()[0]!;
    const [first, second] = sandbox.responses(study.link_id);
    sandbox.overrideNext(
      { listener: 'api', pathIncludes: `/responses/${encodeURIComponent(study.link_id)}?page=1&` },
      { status: 200, body: `[${JSON.stringify(first)}, {"id": tru}, ${JSON.stringify(second)}]` },
    );
    const error = await collect(listResponses(client, study, listing, sinks)).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(PayloadError);
    expect((error as Error).message).toMatch(/^list_responses for study ".+": page 1 \[1\] is not JSON/);
    expect(sinks.rawRecords.map((record) => record.query?.page)).toEqual(['0']);
  });

  it('a page identical to the previous one stops paging with a warning', async () => {
    const { sandbox, client, sinks } = await setup({ seed: 5, studies: 1, responses: 20, maxPerPage: 7 });
    const study = sandbox.studies()[0]!;
    const firstPage = sandbox.responses(study.link_id).slice(0, 7);
    sandbox.overrideNext(
      { listener: 'api', pathIncludes: `/responses/${encodeURIComponent(study.link_id)}?page=1&` },
      { status: 200, body: JSON.stringify(firstPage) },
    );
    const result = listResponses(client, study, listing, sinks);
    const items = await collect(result);
    expect(items).toHaveLength(7);
    expect(result.stats.stoppedBy).toBe('repeated_page');
    expect(sinks.warnings.map((w) => w.code)).toContain('page_repeated');
    expect(sinks.warnings.find((w) => w.code === 'page_repeated')).toMatchObject({
      study_id: study.id,
      link_id: study.link_id,
    });
  });

  it('a page cap stops a runaway listing with a warning', async () => {
    const { sandbox, client, sinks } = await setup({ seed: 5, studies: 1, responses: 20, maxPerPage: 7 });
    const study = sandbox.studies()[0]!;
    const result = listResponses(client, study, { ...listing, maxPages: 2 }, sinks);
    expect(await collect(result)).toHaveLength(14);
    expect(result.stats.stoppedBy).toBe('page_cap');
    expect(sinks.warnings.map((w) => w.code)).toContain('page_cap');
  });

  it('deduplicates by id, keeping the newest updated_at; an id served twice pages the list again', async () => {
    const { sandbox, client, sinks } = await setup({ seed: 5, studies: 1, responses: 20, maxPerPage: 7 });
    const study = sandbox.studies()[0]!;
    const all = sandbox.responses(study.link_id);
    const moved = all.find((r) => r.updated_at !== undefined)!;
    const newer = {
      ...moved,
      updated_at: '2099-01-01T00:00:00.000Z',
      short_transcript: 'edited while paging',
    };
    const older = { ...moved, updated_at: '2000-01-01T00:00:00.000Z', short_transcript: 'stale' };
    const lastPage = all.slice(14);
    sandbox.overrideNext(
      { listener: 'api', pathIncludes: `?page=2&` },
      { status: 200, body: JSON.stringify([...lastPage, newer, older]) },
    );
    const result = listResponses(client, study, listing, sinks);
    const items = await collect(result);
    expect(items).toHaveLength(20);
    expect(new Set(items.map((r) => r.id)).size).toBe(20);
    expect(items.find((r) => r.id === moved.id)?.short_transcript).toBe('edited while paging');
    // The id served twice says the list moved: a second pass (it does not move) settles it.
    expect(result.stats).toMatchObject({ listed: 22 + 20, unique: 20, passes: 2, pages: 8 });
    expect(sinks.warnings.map((w) => w.code)).toEqual(['listing_moved']);
  });

  it('warns when the count found differs from the desc', async () => {
    const { sandbox, client, sinks } = await setup({ seed: 5, studies: 1, responses: 6 });
    const real = sandbox.studies()[0]!;
    const study = { ...real, desc: `${real.title} (9 Responses)` };
    await collect(listResponses(client, study, listing, sinks));
    expect(sinks.warnings.map((w) => w.code)).toEqual(['response_count_mismatch']);
    expect(sinks.warnings[0]?.message).toContain('9');
    // Not compared when the listing is filtered.
    const filtered = memorySinks();
    await collect(listResponses(client, study, { ...listing, includeInProgress: false }, filtered));
    await collect(listResponses(client, study, { ...listing, updatedSince: '2000-01-01' }, filtered));
    expect(filtered.warnings).toEqual([]);
  });

  it('invalid list items and details go to rejects with the reason and the raw record; the run goes on', async () => {
    const { sandbox, client, sinks } = await setup({ seed: 5, studies: 1, responses: 8 });
    const study = sandbox.studies()[0]!;
    const [badItem, badDetail, ...rest] = sandbox.responses(study.link_id);
    sandbox.mutateListItem(study.link_id, badItem!.id, (item) => ({ ...item, short_transcript: 42 }));
    sandbox.mutateDetail(study.link_id, badDetail!.id, (detail) => ({ ...detail, transcript: 'nope' }));
    const results = await collect(
      fetchDetails(client, study, listResponses(client, study, listing, sinks), sinks, { window: 3 }),
    );
    expect(results.map((r) => r.listed.id).sort()).toEqual([badDetail!.id, ...rest.map((r) => r.id)].sort());
    expect(results.find((r) => r.listed.id === badDetail!.id)?.detail).toBeNull();
    expect(results.filter((r) => r.detail !== null)).toHaveLength(rest.length);
    expect(sinks.rejected).toHaveLength(2);
    const [listReject, detailReject] = [
      sinks.rejected.find((r) => r.operation === 'list_responses')!,
      sinks.rejected.find((r) => r.operation === 'get_response')!,
    ];
    expect(listReject).toMatchObject({ stage: 'extract', response_id: badItem!.id, study_id: study.id });
    expect(listReject.reason).toContain('short_transcript');
    expect((listReject.raw as { short_transcript: unknown }).short_transcript).toBe(42);
    expect(detailReject.reason).toContain('transcript');
    expect((detailReject.raw as { transcript: unknown }).transcript).toBe('nope');
    // Every payload was archived raw, the bad ones included.
    expect(sinks.rawRecords.filter((r) => r.operation === 'get_response')).toHaveLength(8 - 1);
  });

  it('a response that vanished is a reject with detail null; others are fetched', async () => {
    const { sandbox, client, sinks } = await setup({ seed: 5, studies: 1, responses: 4 });
    const study = sandbox.studies()[0]!;
    const listed = sandbox.responses(study.link_id);
    const ghost = { ...listed[0]!, id: 'deleted-meanwhile' };
    async function* source() {
      yield* [...listed, ghost];
    }
    const results = await collect(fetchDetails(client, study, source(), sinks, { window: 2 }));
    expect(results).toHaveLength(5);
    expect(results.find((r) => r.listed.id === 'deleted-meanwhile')?.detail).toBeNull();
    expect(sinks.rejected).toHaveLength(1);
    expect(sinks.rejected[0]).toMatchObject({ operation: 'get_response', response_id: 'deleted-meanwhile' });
    expect(sinks.rejected[0]?.reason).toContain('E_NOT_FOUND');
  });

  it('fetchDetails pulls no more than its window ahead', async () => {
    const { sandbox, client, sinks } = await setup({ seed: 5, studies: 1, responses: 12 });
    const study = sandbox.studies()[0]!;
    const listed = sandbox.responses(study.link_id);
    let pulled = 0;
    async function* source() {
      for (const item of listed) {
        pulled += 1;
        yield item;
      }
    }
    let received = 0;
    const aheadAtEachResult: number[] = [];
    for await (const _ of fetchDetails(client, study, source(), sinks, { window: 3 })) {
      received += 1;
      aheadAtEachResult.push(pulled - received);
    }
    expect(received).toBe(12);
    expect(Math.max(...aheadAtEachResult)).toBeLessThanOrEqual(2);
  });

  it('listing and details ask for nothing more while raw/ says it is not drained', async () => {
    const { sandbox, client, sinks } = await setup({ seed: 5, studies: 1, responses: 12 });
    const study = sandbox.studies()[0]!;
    const recorded = (operation: string) => sinks.rawRecords.filter((r) => r.operation === operation).length;
    const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

    let release = holdRaw(sinks);
    const listed = listResponses(client, study, { ...listing, perPage: 4 }, sinks);
    const paged = listed.paged();
    await settle();
    expect(recorded('list_responses')).toBe(1); // the first page, then a wait
    release();
    await paged;
    expect(recorded('list_responses')).toBe(4); // three pages of 4 and the empty one

    release = holdRaw(sinks);
    const details = collect(fetchDetails(client, study, listed, sinks, { window: 3 }));
    await settle();
    expect(recorded('get_response')).toBe(0);
    release();
    expect(await details).toHaveLength(12);
    expect(recorded('get_response')).toBe(12);
  });

  it('a refused key ends fetchDetails with an AuthError', async () => {
    const { sandbox, sinks } = await setup({ seed: 5, studies: 1, responses: 3 });
    const study = sandbox.studies()[0]!;
    const wrong = sandboxClient(sandbox, { apiKey: 'not-the-key' });
    opened[0]!.clients.push(wrong);
    const listed = sandbox.responses(study.link_id);
    async function* source() {
      yield* listed;
    }
    await expect(collect(fetchDetails(wrong, study, source(), sinks, { window: 2 }))).rejects.toBeInstanceOf(
      AuthError,
    );
    expect(sinks.rejected).toEqual([]);
  });

  it('a renamed study is still selected by its permanent id, and by its old link_id via state', async () => {
    const { sandbox, client, sinks } = await setup({ seed: 5, studies: 3, responses: 3 });
    const before = await listStudies(client, sinks);
    const target = before[1]!;
    const byId = selectStudies(before, { include: [target.id], exclude: [] });
    expect(byId.map((s) => s.id)).toEqual([target.id]);

    sandbox.renameStudy(target.id, 'renamed-study');
    const after = await listStudies(client, sinks);
    const again = selectStudies(after, { include: [target.id], exclude: [] });
    expect(again.map((s) => [s.id, s.link_id])).toEqual([[target.id, 'renamed-study']]);
    // The old link_id still names it when the last run's link_id is known.
    const known = new Map([[target.id, target.link_id]]);
    expect(selectStudies(after, { include: ['*'], exclude: [], only: [target.link_id] }, known)).toEqual(
      again,
    );
    expect(() => selectStudies(after, { include: ['*'], exclude: [], only: [target.link_id] })).toThrow(
      /renamed.*study-export studies/,
    );
    // And the renamed study's responses are listed under the new link_id.
    const items = await collect(listResponses(client, again[0]!, listing, sinks));
    expect(items).toHaveLength(3);
  });

  it('include/exclude globs match link_ids, ids are exact', async () => {
    const { sandbox, client, sinks } = await setup({ seed: 5, studies: 0, responses: 0 });
    for (const link_id of ['wave-1', 'wave-2', 'wave/3', 'pilot', 'wave-10']) {
      sandbox.addStudy({ link_id, responses: 0 });
    }
    const studies = await listStudies(client, sinks);
    const pick = (include: string[], exclude: string[] = []) =>
      selectStudies(studies, { include, exclude })
        .map((s) => s.link_id)
        .sort();
    expect(pick(['*'])).toEqual(['pilot', 'wave-1', 'wave-10', 'wave-2', 'wave/3']);
    expect(pick(['wave-?'])).toEqual(['wave-1', 'wave-2']);
    expect(pick(['wave*'], ['wave-1*'])).toEqual(['wave-2', 'wave/3']);
    expect(pick(['wave.1'])).toEqual([]);
    const pilot = studyByLinkId(sandbox, 'pilot');
    expect(pick(['*'], [pilot.id])).toEqual(['wave-1', 'wave-10', 'wave-2', 'wave/3']);
  });

  it('invalid studies go to rejects; a non-array study list is a PayloadError', async () => {
    const { sandbox, client, sinks } = await setup({ seed: 5, studies: 2, responses: 0 });
    const good = sandbox.studies();
    sandbox.overrideNext(
      { listener: 'api', pathIncludes: 'list_surveys' },
      { status: 200, body: JSON.stringify([...good, { id: 'x', link_id: 'y', title: 3 }]) },
    );
    const studies = await listStudies(client, sinks);
    expect(studies).toEqual(good);
    expect(sinks.rejected).toHaveLength(1);
    expect(sinks.rejected[0]).toMatchObject({ operation: 'list_surveys', study_id: 'x', link_id: 'y' });
    expect(sinks.rejected[0]?.reason).toContain('title');
    sandbox.overrideNext(
      { listener: 'api', pathIncludes: 'list_surveys' },
      { status: 200, body: '{"studies": []}' },
    );
    await expect(listStudies(client, sinks)).rejects.toMatchObject({ code: 'E_PAYLOAD' });
  });

  it('a study listed twice: alike, kept once with a warning; different, the second is a reject', async () => {
    const { sandbox, client, sinks } = await setup({ seed: 6, studies: 4, responses: 0 });
    const [first, second] = sandbox.studies();
    // Alike whatever the order of the keys.
    const reordered = Object.fromEntries(Object.entries(first!).reverse());
    const renamed = { ...second!, link_id: 'another-link' };
    sandbox.overrideNext(
      { listener: 'api', pathIncludes: 'list_surveys' },
      { status: 200, body: JSON.stringify([first, second, reordered, renamed]) },
    );
    expect(second).toBeDefined();
    expect(await listStudies(client, sinks)).toEqual([first, second]);
    expect(sinks.warnings.map((w) => [w.code, w.study_id])).toEqual([['duplicate_study', first!.id]]);
    expect(sinks.rejected).toHaveLength(1);
    expect(sinks.rejected[0]).toMatchObject({
      operation: 'list_surveys',
      study_id: second!.id,
      link_id: 'another-link',
    });
    expect(sinks.rejected[0]?.reason).toBe(
      `[3] id: study "${second!.id}" listed twice, with different content`,
    );
  });
});
