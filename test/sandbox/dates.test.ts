/**
 * The sandbox never dates a study or a response after the moment it serves it, however many
 * studies it holds, and its dates stay a function of seed, sizes and starting clock.
 */
import { describe, expect, it } from 'vitest';
import type { ListedResponse, Study } from '../../src/api/resources.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { api } from '../helpers/sandbox.ts';

/** Every study over HTTP, and every response's created_at/updated_at as the list serves them. */
async function everyDate(sandbox: Sandbox): Promise<{ studies: Study[]; times: number[] }> {
  const studies = (await api<Study[]>(sandbox, 'list_surveys')).body;
  const times = studies.map((study) => Date.parse(study.created_at));
  for (const study of sandbox.studies()) {
    for (const item of sandbox.responses(study.link_id)) {
      times.push(Date.parse(item.created_at));
      if (item.updated_at !== undefined) times.push(Date.parse(item.updated_at));
    }
  }
  return { studies, times };
}

/** Study link_ids having a response updated after `sinceMs` (the list's filter reads every updated_at, shown or not). */
async function updatedAfter(sandbox: Sandbox, sinceMs: number): Promise<string[]> {
  const since = new Date(sinceMs).toISOString();
  const found: string[] = [];
  for (const study of sandbox.studies()) {
    const reply = await api<ListedResponse[]>(
      sandbox,
      `responses/${encodeURIComponent(study.link_id)}?per_page=1000&updated_since=${since}`,
    );
    expect(reply.status).toBe(200);
    if (reply.body.length > 0) found.push(study.link_id);
  }
  return found;
}

describe('sandbox dates', () => {
  it('at 2,000 studies, nothing is created or updated after the clock', async () => {
    const sandbox = await startSandbox({ seed: 7, studies: 2000, responses: 25 });
    try {
      const now = sandbox.clock.now();
      const { studies, times } = await everyDate(sandbox);
      // 2,000 visible to the primary key but one (the last is the secondary key's alone).
      expect(studies).toHaveLength(1999);
      expect(times.length).toBeGreaterThan(2000 * 25);
      expect(times.filter((t) => Number.isNaN(t))).toEqual([]);
      expect(times.filter((t) => t > now)).toEqual([]);
      expect(await updatedAfter(sandbox, now)).toEqual([]);
      // Still spread out in time, in their listing order.
      const created = studies.map((study) => Date.parse(study.created_at));
      expect(created).toEqual([...created].sort((a, b) => a - b));
      expect(new Set(created).size).toBe(created.length);
    } finally {
      await sandbox.close();
    }
  });

  it('holds for a clock before the usual first date, and is the same data for the same seed and clock', async () => {
    const startTime = Date.parse('2024-06-01T00:00:00Z');
    const first = await startSandbox({ seed: 3, studies: 300, responses: 40, startTime });
    const second = await startSandbox({ seed: 3, studies: 300, responses: 40, startTime });
    try {
      const { studies, times } = await everyDate(first);
      expect(times.filter((t) => t > startTime)).toEqual([]);
      expect(await updatedAfter(first, startTime)).toEqual([]);
      expect((await everyDate(second)).studies).toEqual(studies);
      for (const study of studies)
        expect(second.responses(study.link_id)).toEqual(first.responses(study.link_id));
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  it('keeps the usual dates (from 2025-03-03, three days and an hour apart) while they fit before the clock', async () => {
    const sandbox = await startSandbox({
      seed: 7,
      studies: 6,
      startTime: Date.parse('2030-05-01T12:00:00Z'),
    });
    try {
      const created = (await api<Study[]>(sandbox, 'list_surveys')).body.map((s) => Date.parse(s.created_at));
      expect(created[0]).toBe(Date.parse('2025-03-03T09:00:00Z'));
      expect(created[1]! - created[0]!).toBe(3 * 86_400_000 + 3_600_000);
    } finally {
      await sandbox.close();
    }
  });
});
