/**
 * A listing that never ends (a schema-valid service answering every page with 1 to 5 new
 * responses) stops promptly: at a bound derived from the count the study declares and the
 * page size seen, or at source.max_pages when it declares none. The run finishes with exit
 * 3 and the warning, the study's watermark holds, and what was listed is exported.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listingBound } from '../../src/extract/listing-paging.ts';
import { readPipelineState } from '../../src/publish/state.ts';
import { runCli } from '../helpers/cli.ts';
import { KEY_ENV, readManifest } from '../helpers/run.ts';
import { responseIdsOf } from '../helpers/run-files.ts';
import { type EndlessService, startEndlessService } from './endless-service.ts';

let dir: string;
const services: EndlessService[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'study-export-endless-'));
});
afterAll(async () => {
  await Promise.all(services.map((service) => service.close()));
  await rm(dir, { recursive: true, force: true });
});

async function runAgainstEndless(name: string, desc: string, source = '') {
  const service = await startEndlessService({ desc, seed: 7 });
  services.push(service);
  const file = join(dir, `${name}.yaml`);
  const out = join(dir, `out-${name}`);
  await writeFile(
    file,
    [
      'name: endless',
      `source: { base_url: "${service.url}", api_key_env: ${KEY_ENV}, retries: 0${source} }`,
      `output: { dir: "${out}" }`,
      'media: { enabled: false }',
    ].join('\n'),
  );
  const result = await runCli(['run', '--config', file], { cwd: dir, env: { [KEY_ENV]: 'k-endless-1' } });
  return { ...result, service, root: join(out, 'endless') };
}

describe.concurrent('a listing that never ends', () => {
  it('stops past the bound the declared count gives, exit 3, warning, watermark held', async () => {
    const { code, stderr, service, root } = await runAgainstEndless('declared', 'Endless (20 Responses)');
    expect(code, stderr).toBe(3);
    // 2 x 20 + 10 pages of at most 5: stopped after at most 90 items, at least 1 a page.
    expect(service.pages()).toBeLessThanOrEqual(listingBound(20, 5) + 1);
    expect(stderr).toMatch(
      /stopped paging after \d+ pages and \d+ listed responses: far more than the 20 its desc declares/,
    );
    const runDir = join(root, 'runs', (await readFile(join(root, 'latest'), 'utf8')).trim());
    const manifest = await readManifest(runDir);
    expect(manifest.warnings.map((w) => w.code)).toContain('listing_beyond_declared');
    expect(manifest.studies[0]).toMatchObject({ study_id: 'study-endless', lossless: false });
    // What was listed is exported (details for each), so nothing seen is thrown away.
    const ids = await responseIdsOf(runDir);
    expect(ids.length).toBeGreaterThan(2 * 20);
    expect(ids.length).toBeLessThanOrEqual(listingBound(20, 5) + 5);
    // The watermark holds: the study has no state entry.
    const state = await readPipelineState(root);
    expect(state.studies['study-endless']).toBeUndefined();
  });

  it('with no declared count, stops at source.max_pages, exit 3, warning', async () => {
    const { code, stderr, service } = await runAgainstEndless(
      'undeclared',
      'No count here',
      ', max_pages: 40',
    );
    expect(code, stderr).toBe(3);
    expect(service.pages()).toBe(40);
    expect(stderr).toMatch(/stopped after 40 pages \(the page cap, source.max_pages/);
  });
});
