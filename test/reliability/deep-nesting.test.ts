/**
 * A hostile service nests one record 100 000 levels deep (JSON.parse takes it; anything
 * recursive overflows the stack). That record becomes a reject with the reason, kept raw as
 * text; every other response is exported and the run finishes partial (exit 3 semantics).
 * Served by a loopback proxy in front of the sandbox: once in a detail, once in a list page.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_NESTING } from '../../src/extract/nesting.ts';
import { verifyRun } from '../../src/load/verify.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { startInterceptingProxy } from '../helpers/intercepting-proxy.ts';
import { readManifest, runAgainst, sandboxConfig } from '../helpers/run.ts';
import { readRejects, responseIdsOf, sandboxResponseIds } from '../helpers/run-files.ts';
import { isDetailPath } from '../helpers/sandbox.ts';

const LEVELS = 100_000;
const deepValue = `${'{"a":['.repeat(LEVELS / 2)}1${']}'.repeat(LEVELS / 2)}`;

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 41, studies: 2, responses: 6 });
});
afterAll(async () => {
  await sandbox.close();
});

describe('a record nested 100 000 levels deep', () => {
  it('in a detail: that response is a reject with the reason and its text; the rest is exported', async () => {
    const [study] = sandbox.studies();
    const victim = sandbox.responses(study!.link_id)[2]!.id;
    const proxy = await startInterceptingProxy(sandbox.base_url, (request) => {
      if (!isDetailPath(request.url) || !request.url!.endsWith(`/${encodeURIComponent(victim)}`))
        return undefined;
      return {
        status: 200,
        body: `{"id":${JSON.stringify(victim)},"survey":"s","transcript":[],"x":${deepValue}}`,
      };
    });
    try {
      await withTempDir(async (out) => {
        const config = sandboxConfig(sandbox, out, { source: { base_url: proxy.url } });
        const result = await runAgainst(sandbox, config);
        expect(proxy.intercepted()).toBe(1);
        expect(result.status).toBe('partial');
        expect(result.rejects).toBe(1);
        const runDir = result.runDir!;
        const [reject] = await readRejects(runDir);
        expect(reject).toMatchObject({ operation: 'get_response', response_id: victim });
        expect(reject!.reason).toContain(`nested deeper than ${MAX_NESTING} levels`);
        expect(typeof reject!.raw).toBe('string');
        expect((reject!.raw as string).length).toBeGreaterThan(LEVELS * 3);
        expect((reject!.raw as string).startsWith(`{"id":${JSON.stringify(victim)}`)).toBe(true);
        // Everything else is there once; the victim still has its responses row (from the list).
        const ids = await responseIdsOf(runDir);
        expect(ids.sort()).toEqual(sandboxResponseIds(sandbox).sort());
        // raw/ keeps the body as text too.
        const rawLines = gunzipSync(await readFile(join(runDir, 'raw', 'get_response.jsonl.gz')))
          .toString('utf8')
          .split('\n')
          .filter(Boolean);
        expect(
          rawLines.filter((line) => line.includes(`"response_id":${JSON.stringify(victim)}`)),
        ).toHaveLength(1);
        expect((await readManifest(runDir)).studies.find((s) => s.study_id === study!.id)?.lossless).toBe(
          false,
        );
        expect((await verifyRun(runDir)).problems).toEqual([]);
      });
    } finally {
      await proxy.close();
    }
  });

  it('in a list page: that item is a reject, the page’s other items are exported', async () => {
    const [study] = sandbox.studies();
    const listPath = `/api/public/responses/${encodeURIComponent(study!.link_id)}`;
    const proxy = await startInterceptingProxy(sandbox.base_url, (request) => {
      const url = new URL(request.url ?? '/', 'http://x');
      if (url.pathname !== listPath || url.searchParams.get('page') !== '0') return undefined;
      const items = sandbox.responses(study!.link_id).map((item) => JSON.stringify(item));
      items.splice(1, 0, `{"id":"deep-item","x":${deepValue}}`);
      return { status: 200, body: `[${items.join(',')}]` };
    });
    try {
      await withTempDir(async (out) => {
        const config = sandboxConfig(sandbox, out, { source: { base_url: proxy.url } });
        const result = await runAgainst(sandbox, config);
        expect(proxy.intercepted()).toBe(1);
        expect(result.status).toBe('partial');
        const rejects = await readRejects(result.runDir!);
        expect(rejects).toHaveLength(1);
        expect(rejects[0]).toMatchObject({ operation: 'list_responses', response_id: 'deep-item' });
        expect(rejects[0]!.reason).toMatch(/^page 0 \[1\] nested deeper than/);
        const ids = await responseIdsOf(result.runDir!);
        expect(ids.sort()).toEqual(sandboxResponseIds(sandbox).sort());
      });
    } finally {
      await proxy.close();
    }
  });
});
