/**
 * The handoff ledger: append-only records, one object each, safe for writers at once; `archive`
 * and `qdpx` append theirs with the responses their packages hold; `handoffs` lists them (all,
 * or those that held a response) and `erase` names the packages that held what it erased.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendHandoff, type Handoff, heldResponses, listHandoffs } from '../../src/ledger/index.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readHyparquet } from '../helpers/readers.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';

describe('the ledger', () => {
  it('keeps every record of writers appending at once, and finds those holding a response', async () => {
    await withTempDir(async (dir) => {
      const output = new LocalStorage(dir);
      const at = new Date('2026-11-28T08:00:00Z');
      await Promise.all(
        Array.from({ length: 24 }, (_, n) =>
          appendHandoff(output, {
            at,
            command: n % 2 === 0 ? 'archive' : 'qdpx',
            package: `package-${n}`,
            location: `/somewhere/package-${n}`,
            studies: [{ study_id: 's1', link_id: 'one' }],
            identified: n % 3 !== 0,
            responses: [{ id: `r-${n}` }, { id: 'r-all', ...(n % 3 === 0 ? { pseudonym: `p-${n}` } : {}) }],
          }),
        ),
      );
      const all = await listHandoffs(output);
      expect(all.map((h) => h.package).sort()).toEqual(
        Array.from({ length: 24 }, (_, n) => `package-${n}`).sort(),
      );
      expect((await listHandoffs(output, { responseId: 'r-7' })).map((h) => h.package)).toEqual([
        'package-7',
      ]);
      expect(await listHandoffs(output, { responseId: 'r-all' })).toHaveLength(24);
      expect(await listHandoffs(output, { responseId: 'r-none' })).toEqual([]);
      // No record names a response by its id.
      for (const name of await readdir(join(dir, 'handoffs'))) {
        const text = await readFile(join(dir, 'handoffs', name), 'utf8');
        expect(text).not.toMatch(/"r-\d+"|r-all/);
      }
      const pseudonymised = all.find((h) => h.package === 'package-3') as Handoff;
      expect(pseudonymised.responses.map((r) => r.pseudonym)).toEqual([undefined, 'p-3']);
    });
  });

  it("names a de-identified package's responses by the ids its pseudonyms stand for, and keeps the pseudonyms", () => {
    const linkage = [
      { kind: 'response', pseudonym: 'p-1', response_id: 'r-1' },
      { kind: 'attribute', pseudonym: 'p-9', response_id: 'r-2' },
    ];
    expect(heldResponses(['p-1', 'r-2'], linkage)).toEqual([{ id: 'r-1', pseudonym: 'p-1' }, { id: 'r-2' }]);
  });
});

describe('archive, qdpx, handoffs and erase', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 11, studies: 3, responses: 4 });
  });
  afterAll(async () => {
    await sandbox.close();
  });

  it('records each package with its responses; erase names those that held the erased one', async () => {
    await withTempDir(async (dir) => {
      const config = sandboxConfig(sandbox, join(dir, 'out'), { output: { formats: ['csv', 'parquet'] } });
      const run = await runAgainst(sandbox, config);
      const output = join(dir, 'out', 'test');
      const responses = await readHyparquet(join(run.runDir as string, 'responses.parquet'));
      const [study] = sandbox.studies();
      const ofStudy = responses
        .filter((row) => row.study_id === study?.id)
        .map((row) => String(row.response_id));
      const other = responses.find((row) => row.study_id !== study?.id);

      expect(
        (await runCli(['archive', output, '--study', study?.link_id as string, '--to', join(dir, 'bags')]))
          .code,
      ).toBe(0);
      expect((await runCli(['qdpx', output, '--to', join(dir, 'qdpx')])).code).toBe(0);
      expect(
        (await runCli(['share', output, '--study', study?.link_id as string, '--to', join(dir, 'shared')]))
          .code,
      ).toBe(0);

      const listed = await runCli(['handoffs', output, '--json']);
      expect(listed.code).toBe(0);
      const handoffs = listed.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Handoff);
      const studies = new Set(responses.map((row) => row.study_id));
      expect(studies.size).toBeGreaterThan(1);
      expect(handoffs.map((h) => h.command).sort()).toEqual([
        'archive',
        ...[...studies].map(() => 'qdpx'),
        'share',
      ]);
      const shared = handoffs.find((h) => h.command === 'share') as Handoff;
      expect(shared.responses).toHaveLength(ofStudy.length);
      const bag = handoffs.find((h) => h.command === 'archive') as Handoff;
      expect(bag.location).toBe(join(dir, 'bags', bag.package));
      expect(bag.responses).toHaveLength(ofStudy.length);

      const chosen = ofStudy[0] as string;
      const holding = await runCli(['handoffs', output, '--response', chosen]);
      expect(holding.stdout.trim().split('\n')).toHaveLength(3);
      expect(holding.stdout).toContain(bag.package);
      const none = await runCli(['handoffs', output, '--response', String(other?.response_id), '--json']);
      expect(none.stdout.trim().split('\n')).toHaveLength(1);

      const erased = await runCli(['erase', output, '--response', chosen]);
      expect(erased.code).toBe(0);
      expect(erased.stdout).toContain('3 package(s) held an erased response');
      expect(erased.stdout).toContain(bag.location);
      const [record] = (await readdir(join(output, 'erasures'))).filter((name) => name.endsWith('.json'));
      const erasure = JSON.parse(await readFile(join(output, 'erasures', record as string), 'utf8'));
      expect(erasure.handoffs).toHaveLength(3);
      expect(JSON.stringify(erasure)).not.toContain(chosen);
    });
  });
});
