/**
 * The privacy profile through the CLI, on a sandbox that plants personal data: archive and qdpx
 * made with the profile hold none of it in any byte (every zip, workbook, gzip, Parquet file and
 * project source opened by test/helpers/output-scan.ts), the same response gets the same
 * pseudonym in a bag and a project and the same tags, another secret others, the linkage table
 * maps every pseudonym back, the bag and the project still validate, --identified says so, and
 * the raw output's bytes never change.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { validateDataPackage } from '../helpers/frictionless.ts';
import { scanOutput } from '../helpers/output-scan.ts';
import { cli, csvRows, onlyRun, plantedIn, privacyPipeline, run, unzipText } from '../helpers/privacy.ts';
import { snapshot } from '../helpers/run.ts';

const schema = join(import.meta.dirname, '../fixtures/refi-qda/Project-mrt2019.xsd');
const checker = join(import.meta.dirname, '../qdpx/check_qdpx.py');

let sandbox: Sandbox;
beforeAll(async () => {
  // Seed 1: two of the three studies pass email and name URL parameters.
  sandbox = await startSandbox({ seed: 1, studies: 3, responses: 8 });
});
afterAll(async () => {
  await sandbox.close();
});

const profile = ['attributes: { "utm_*": keep, id: pseudonymise }', 'text: { terms: terms.txt }'];

describe('handoffs with a privacy profile', () => {
  it('leave no planted personal data in any byte of a bag or a project, and the raw output untouched', async () => {
    await withTempDir(async (dir) => {
      await privacyPipeline(dir, sandbox, profile);
      expect((await cli(dir, sandbox, ['run'])).code).toBe(0);
      const output = join(dir, 'out', 'priv');
      const runDir = await onlyRun(output);
      const planted = await plantedIn(runDir);
      const before = await snapshot(output);

      const bags = join(dir, 'bags');
      const linkage = join(dir, 'keys', 'linkage.csv');
      await mkdir(join(dir, 'keys'));
      const archived = await cli(dir, sandbox, ['archive', '--to', bags, '--zip', '--linkage', linkage]);
      expect(archived.stderr).toBe('');
      expect(archived.code).toBe(0);
      expect(archived.stdout).toContain('linkage table');
      const projects = join(dir, 'projects');
      const exported = await cli(dir, sandbox, ['qdpx', '--to', projects]);
      expect(exported.code).toBe(0);
      expect(await snapshot(output)).toEqual(before);

      const needles = [...planted.responseIds, ...planted.attributeValues, ...planted.said];
      expect(await scanOutput(bags, needles)).toEqual([]);
      expect(await scanOutput(projects, needles)).toEqual([]);
      // The scan finds them where they are: in the raw output.
      expect((await scanOutput(output, planted.said)).length).toBeGreaterThan(0);

      const studies = sandbox.studies();
      const linkRows = csvRows(await readFile(linkage, 'utf8'));
      const pseudonymOf = new Map(
        linkRows.filter((r) => r.kind === 'response').map((r) => [r.response_id, r.pseudonym]),
      );
      expect([...pseudonymOf.keys()].sort()).toEqual([...planted.responseIds].sort());
      for (const row of linkRows.filter((r) => r.kind === 'attribute'))
        expect(planted.attributeValues).toContain(row.value);

      for (const study of studies) {
        const zip = join(bags, `${study.link_id}.zip`);
        expect((await cli(dir, sandbox, ['verify', zip])).code).toBe(0);
        const data = `${study.link_id}/data`;
        const responses = csvRows(await unzipText(zip, `${data}/tables/responses.csv`));
        for (const response of responses) expect([...pseudonymOf.values()]).toContain(response.response_id);
        const info = await unzipText(zip, `${study.link_id}/bag-info.txt`);
        expect(info).toMatch(/^Privacy: de-identified by a privacy profile: \d+ response ids pseudonymised/m);
        const index = await unzipText(zip, `${data}/index.html`);
        expect(index).toContain('De-identified by the pipeline');
        expect(index).toContain('Recordings are left out');
        const descriptor = JSON.parse(await unzipText(zip, `${data}/datapackage.json`));
        expect(descriptor.privacy.identified).toBe(false);
        expect(JSON.stringify(descriptor.privacy)).not.toContain('first secret');
        // No recording, and no provenance payloads (raw, as the service sent them).
        const { stdout: list } = await run('unzip', ['-Z1', zip]);
        expect(list).not.toMatch(/recordings\/.+\.(mp3|mp4|ts)$/m);
        expect(list).not.toContain('provenance/raw/');
        await checkProject(dir, join(projects, `${study.link_id}.qdpx`), zip, study.link_id, study.id);
      }
    });
  }, 240_000);

  it('gives the same response the same pseudonym in every package and run, and other pseudonyms under another secret', async () => {
    await withTempDir(async (dir) => {
      await privacyPipeline(dir, sandbox, profile);
      expect((await cli(dir, sandbox, ['run'])).code).toBe(0);
      const ids = async (to: string, secret: string) => {
        expect((await cli(dir, sandbox, ['archive', '--to', to], secret)).code).toBe(0);
        const all: string[] = [];
        for (const bag of await readdir(to)) {
          expect((await validateDataPackage(join(to, bag, 'data'))).errors).toEqual([]);
          all.push(
            ...csvRows(await readFile(join(to, bag, 'data/tables/responses.csv'), 'utf8')).map(
              (r) => `${r.response_id} ${r.summary}`,
            ),
          );
        }
        return all.sort();
      };
      const first = await ids(join(dir, 'a'), 'first secret');
      expect(await ids(join(dir, 'b'), 'first secret')).toEqual(first);
      const other = await ids(join(dir, 'c'), 'second secret');
      const pseudonyms = (list: string[]) => new Set(list.map((line) => line.split(' ')[0]));
      const overlap = [...pseudonyms(other)].filter((id) => pseudonyms(first).has(id));
      expect(overlap).toEqual([]);
    });
  }, 240_000);
});

/** The project validates, its coded passages are the bag's (de-identified) answers, with the same ids. */
async function checkProject(dir: string, project: string, bag: string, linkId: string, studyId: string) {
  const work = join(dir, 'check', linkId);
  await mkdir(work, { recursive: true });
  await run('unzip', ['-q', bag, `${linkId}/data/tables/*.csv`, '-d', work]);
  const tables = join(work, linkId, 'data', 'tables');
  // Recordings were left out of both packages by the profile: none for the checker to find.
  const media = await readFile(join(tables, 'media.csv'), 'utf8');
  await writeFile(join(tables, 'media.csv'), `${media.split('\n')[0]}\n`);
  await writeFile(join(work, 'project.qde'), await unzipText(project, 'project.qde'));
  const lint = await run('xmllint', ['--noout', '--schema', schema, join(work, 'project.qde')]);
  expect(lint.stderr).toContain('validates');
  const { stdout } = await run('python3', [checker, project, tables, studyId], { maxBuffer: 1 << 26 });
  const check = JSON.parse(stdout) as { problems: string[]; recordings: number; answers: number };
  expect(check.problems).toEqual([]);
  expect(check.answers).toBeGreaterThan(0);
  expect(check.recordings).toBe(0);
  const qde = await readFile(join(work, 'project.qde'), 'utf8');
  expect(qde).toContain('De-identified by the pipeline');
}
