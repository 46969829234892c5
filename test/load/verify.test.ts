/** `verify` re-checks a finished run; each kind of damage is found and named. */
import { appendFile, cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Papa from 'papaparse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runTableNames } from '../../src/tables/index.ts';
import { hashFile } from '../../src/util/fs.ts';
import { withTempDir } from '../helpers/environment.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';

let sandbox: Sandbox;
let out: string;
let pristine: string;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 3, studies: 4, responses: 4 });
  out = await mkdtemp(join(tmpdir(), 'study-export-verify-'));
  const result = await runAgainst(sandbox, sandboxConfig(sandbox, out, { media: { enabled: true } }));
  pristine = result.runDir!;
});
afterAll(async () => {
  await rm(out, { recursive: true, force: true });
  await sandbox.close();
});

/** A damaged copy of the pristine run. */
async function damaged(damage: (dir: string) => Promise<void>): Promise<string[]> {
  return withTempDir(async (dir) => {
    const copy = join(dir, 'run');
    await cp(pristine, copy, { recursive: true });
    await damage(copy);
    return (await verifyRun(copy)).problems;
  });
}

describe('verify', () => {
  it('passes an untouched run and says what it checked', async () => {
    const result = await verifyRun(pristine);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.checked.tables).toBe(runTableNames.length * 2);
    expect(result.checked.zipEntries).toBeGreaterThan(0);
  });

  it('names a file whose bytes changed', async () => {
    const problems = await damaged((dir) => appendFile(join(dir, 'studies.csv'), 'x'));
    expect(problems.some((p) => p.startsWith('studies.csv:') && p.includes('bytes'))).toBe(true);
  });

  it('names a missing file and an unlisted one', async () => {
    const problems = await damaged(async (dir) => {
      await rm(join(dir, 'attributes.parquet'));
      await writeFile(join(dir, 'stray.txt'), 'hello');
    });
    expect(problems).toContain('attributes.parquet: listed in the manifest but missing');
    expect(problems).toContain('stray.txt: present but not listed in the manifest');
  });

  it('names an office lock file as such, as a note that does not fail the run', async () => {
    const result = await withTempDir(async (dir) => {
      const copy = join(dir, 'run');
      await cp(pristine, copy, { recursive: true });
      const [sheet] = await readdir(join(copy, 'wide'));
      // What LibreOffice leaves beside a file it has open, and what Excel does.
      await writeFile(join(copy, 'wide', `.~lock.${sheet}#`), ',user,host,24.11.2026 23:50,user;');
      await writeFile(join(copy, '~$answers.csv'), 'owner');
      return verifyRun(copy);
    });
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.notes).toHaveLength(2);
    expect(
      result.notes.some((n) =>
        /^wide\/\.~lock\..+\.csv#: a lock file of LibreOffice or Excel, left while wide\/.+\.csv is open/.test(
          n,
        ),
      ),
    ).toBe(true);
    expect(
      result.notes.some(
        (n) => n.startsWith('~$answers.csv: a lock file') && n.includes('while answers.csv is open'),
      ),
    ).toBe(true);
  });

  it('finds a dropped row, a duplicated key and an orphan, even when the hashes were redone', async () => {
    const problems = await damaged(async (dir) => {
      // Whole records (answers hold line breaks inside quoted cells), not lines.
      const csv = Papa.parse<string[]>(await readFile(join(dir, 'answers.csv'), 'utf8'), {
        skipEmptyLines: true,
      });
      const [header, first, ...rest] = csv.data;
      // Drop one row, duplicate another, and point a third at a response that does not exist.
      const orphan = ['no-such-response', ...rest[1]!.slice(1)];
      const records = [header!, first!, first!, orphan, ...rest.slice(3)];
      await writeFile(join(dir, 'answers.csv'), `${Papa.unparse(records, { newline: '\r\n' })}\r\n`);
      await rehash(dir, 'answers.csv');
    });
    expect(problems.some((p) => p.startsWith('answers.csv:') && p.includes('rows, the manifest says'))).toBe(
      true,
    );
    expect(problems.some((p) => p.startsWith('answers.csv: duplicate primary key'))).toBe(true);
    expect(problems).toContain('answers.csv: response_id "no-such-response" is not in responses');
  });

  it('checks foreign keys within one format: a response missing from the CSV orphans its CSV answers', async () => {
    let dropped = '';
    const problems = await damaged(async (dir) => {
      const [header, first, ...rest] = (await readFile(join(dir, 'responses.csv'), 'utf8')).split('\r\n');
      dropped = first!.split(',')[0]!;
      await writeFile(join(dir, 'responses.csv'), [header, ...rest].join('\r\n'));
      await rehash(dir, 'responses.csv');
    });
    // responses.parquet still holds the id; only the CSV side is broken, and it is named.
    expect(problems).toContain(`answers.csv: response_id "${dropped}" is not in responses`);
    expect(problems.some((p) => p.startsWith('answers.parquet:'))).toBe(false);
  });

  it('reads a CSV cell whose character straddles two read chunks', async () => {
    const problems = await damaged(async (dir) => {
      const responses = (await readFile(join(dir, 'responses.csv'), 'utf8')).split('\r\n');
      const oldId = responses[1]!.split(',')[0]!;
      // The id's 3-byte character starts one byte before 64 KiB, where a file stream cuts.
      const before = Buffer.byteLength(`${responses[0]}\r\n`);
      const newId = `${'x'.repeat(65_535 - before)}研究`;
      for (const file of (await readdir(dir)).filter((name) => name.endsWith('.csv'))) {
        const text = await readFile(join(dir, file), 'utf8');
        await writeFile(join(dir, file), text.replaceAll(`\r\n${oldId},`, `\r\n${newId},`));
        await rehash(dir, file);
      }
      expect(
        Buffer.from(await readFile(join(dir, 'responses.csv')))
          .subarray(65_535, 65_538)
          .toString(),
      ).toBe('研');
    });
    expect(problems).toEqual([]);
  });

  it('finds a damaged zip', async () => {
    const problems = await damaged(async (dir) => {
      const zip = join(dir, 'media.zip');
      const bytes = await readFile(zip);
      await writeFile(zip, bytes.subarray(0, bytes.length - 100));
      await rehash(dir, 'media.zip');
    });
    expect(problems.some((p) => p.startsWith('media.zip: cannot be read'))).toBe(true);
  });
});

/** Rewrites the manifest's entry for one file so only the deeper checks can catch the damage. */
async function rehash(dir: string, path: string): Promise<void> {
  const manifestPath = join(dir, 'manifest.json');
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8'));
  const entry = manifest.files.find((f: { path: string }) => f.path === path);
  Object.assign(entry, await hashFile(join(dir, path)));
  await writeFile(manifestPath, JSON.stringify(manifest));
}
