/**
 * API faults end to end: 5xx, 429 with Retry-After (a huge one too), dropped connections,
 * truncated bodies, latency, slow and stalled bodies (slow-proxy.ts). A run through them
 * exports exactly what a fault-free run exports, and records the retries.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CountersSnapshot } from '../../src/api/counters.ts';
import { verifyRun } from '../../src/load/verify.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readManifest, runAgainst, sandboxConfig } from '../helpers/run.ts';
import {
  expectEveryResponseOnce,
  expectNoSecretIn,
  readRejects,
  sandboxResponseIds,
  sortedCsvRows,
} from '../helpers/run-files.ts';
import { startSlowProxy } from './slow-proxy.ts';

const compared = ['responses', 'answers', 'transcript', 'attributes', 'questions'] as const;

let sandbox: Sandbox;
let baseline: Record<string, string[]>;
let baselineOut: string;

/** Small pages so a run makes many requests; retries enough that no request runs out of them. */
const settings = { source: { per_page: 4, retries: 8, concurrency: 4 }, incremental: false };

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 21, studies: 3, responses: 12 });
  // One fault-free run, the reference for the whole file.
  baselineOut = await mkdtemp(join(tmpdir(), 'study-export-reliability-'));
  const result = await runAgainst(sandbox, sandboxConfig(sandbox, baselineOut, settings));
  expect(result.status).toBe('complete');
  baseline = {};
  for (const table of compared) baseline[table] = await sortedCsvRows(result.runDir!, table);
});
afterAll(async () => {
  await sandbox.close();
  await rm(baselineOut, { recursive: true, force: true });
});

async function expectSameTablesAsBaseline(runDir: string): Promise<void> {
  for (const table of compared) {
    expect(await sortedCsvRows(runDir, table), table).toEqual(baseline[table]);
  }
}

describe('API faults', () => {
  it('the baseline is a real export', () => {
    expect(baseline.responses!.length - 1).toBe(sandboxResponseIds(sandbox).length);
    expect(baseline.answers!.length).toBeGreaterThan(baseline.responses!.length);
  });

  async function runWithFaults(spec: string) {
    const out = await mkdtemp(join(tmpdir(), 'study-export-reliability-'));
    const from = sandbox.requests.length;
    sandbox.setFaults(spec);
    try {
      const result = await runAgainst(sandbox, sandboxConfig(sandbox, out, settings));
      return { out, result, statuses: sandbox.requests.slice(from).map((r) => r.status) };
    } finally {
      sandbox.setFaults(null);
    }
  }

  async function expectLosslessAgainstBaseline(out: string, result: Awaited<ReturnType<typeof runAgainst>>) {
    expect(result.status).toBe('complete');
    expect(result.rejects).toBe(0);
    const runDir = result.runDir!;
    await expectSameTablesAsBaseline(runDir);
    await expectEveryResponseOnce(runDir, sandboxResponseIds(sandbox));
    expect(await readRejects(runDir)).toEqual([]);
    expect((await verifyRun(runDir)).problems).toEqual([]);
    await expectNoSecretIn(out, sandbox.api_key);
    return (await readManifest(runDir)).requests as CountersSnapshot;
  }

  it('5xx, 429 with Retry-After, resets, truncated bodies and latency: the same tables as a fault-free run', async () => {
    const { out, result, statuses } = await runWithFaults(
      '5xx=0.1,429=0.05,reset=0.05,truncate=0.05,latency=20ms,retry_after=1s',
    );
    try {
      const requests = await expectLosslessAgainstBaseline(out, result);
      // The faults really happened, and the manifest counts the retries they caused.
      expect(statuses).toContain(0);
      expect(statuses).toContain(429);
      expect(statuses.some((s) => s === 500 || s === 503)).toBe(true);
      const retries = Object.values(requests.retries).reduce((a, b) => a + b, 0);
      expect(retries).toBeGreaterThanOrEqual(statuses.filter((s) => s !== 200).length);
      expect(requests.retries['429']).toBeGreaterThan(0);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });

  it('bodies cut short (and nothing else) are retried until whole: the same tables', async () => {
    const { out, result, statuses } = await runWithFaults('truncate=0.3,latency=5ms');
    try {
      const requests = await expectLosslessAgainstBaseline(out, result);
      expect(statuses.every((s) => s === 200)).toBe(true);
      // Only truncation can have caused these.
      expect(Object.values(requests.retries).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });

  it('bodies sent slowly, in small chunks with pauses: the same tables, and no retries', async () => {
    const proxy = await startSlowProxy(sandbox.base_url, { chunkBytes: 256, pauseMs: 2 });
    try {
      await withTempDir(async (out) => {
        const config = sandboxConfig(sandbox, out, {
          ...settings,
          source: { ...settings.source, base_url: proxy.url },
        });
        const result = await runAgainst(sandbox, config);
        const requests = await expectLosslessAgainstBaseline(out, result);
        expect(requests.retries).toEqual({});
      });
    } finally {
      await proxy.close();
    }
  });

  it('a body that stalls half-way for longer than the timeout is abandoned and retried: the same tables', async () => {
    const study = sandbox.studies()[0]!;
    const proxy = await startSlowProxy(sandbox.base_url, {
      chunkBytes: 512,
      pauseMs: 0,
      stallMs: 1500,
      stallPath: `/responses/${encodeURIComponent(study.link_id)}/`,
    });
    try {
      await withTempDir(async (out) => {
        const source = { ...settings.source, base_url: proxy.url, timeout_ms: 400 };
        const result = await runAgainst(sandbox, sandboxConfig(sandbox, out, { ...settings, source }));
        const requests = await expectLosslessAgainstBaseline(out, result);
        expect(proxy.stalled()).toBe(1);
        expect(Object.values(requests.retries).reduce((a, b) => a + b, 0)).toBe(1);
      });
    } finally {
      await proxy.close();
    }
  });

  it('a 429 asking to wait an hour does not stall the run: the wait is capped and counted', async () => {
    await withTempDir(async (out) => {
      sandbox.overrideNext(
        { listener: 'api', pathIncludes: '/api/public/responses/' },
        { status: 429, body: '{"error":"rate limited"}', headers: { 'retry-after': '3600' } },
      );
      // The cap comes from the pipeline file (source.max_retry_after_s), so the test waits 1 s, not 60.
      const capped = { ...settings, source: { ...settings.source, max_retry_after_s: 1 } };
      const started = Date.now();
      const result = await runAgainst(sandbox, sandboxConfig(sandbox, out, capped));
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
      expect(result.status).toBe('complete');
      await expectSameTablesAsBaseline(result.runDir!);
      const requests = (await readManifest(result.runDir!)).requests as CountersSnapshot;
      expect(requests.retry_after_capped).toBe(1);
      expect(requests.retries['429']).toBe(1);
      await expectNoSecretIn(out, sandbox.api_key);
    });
  });
});
