/**
 * The privacy profile through the CLI, on a sandbox that plants personal data: archive and qdpx
 * made with the profile hold none of it in any byte (every zip, workbook, gzip, Parquet file and
 * project source opened by test/helpers/output-scan.ts), the same response gets the same
 * pseudonym in a bag and a project and the same tags, another secret others, the linkage table
 * maps every pseudonym back, the bag and the project still validate, --identified says so, and
 * the raw output's bytes never change.
 */
import { access, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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

const profile = ['attributes: { "utm_*": keep, id: pseudonymise }', 'text: { terms: terms.txt }'];

let sandbox: Sandbox;
/** A folder with the pipeline file and the output one run of it wrote (out/priv). */
let shared: string;
beforeAll(async () => {
  // Seed 1: two of the three studies pass email and name URL parameters.
  sandbox = await startSandbox({ seed: 1, studies: 3, responses: 8 });
  shared = await mkdtemp(join(tmpdir(), 'study-export-privacy-'));
  await privacyPipeline(shared, sandbox, profile);
  expect((await cli(shared, sandbox, ['run'])).code).toBe(0);
}, 120_000);
afterAll(async () => {
  if (shared) await rm(shared, { recursive: true, force: true });
  await sandbox.close();
});

describe('handoffs with a privacy profile', () => {
  it('leave no planted personal data in any byte of a bag or a project, and the raw output untouched', async () => {
    await withTempDir(async (dir) => {
      await privacyPipeline(dir, sandbox, profile);
      expect((await cli(dir, sandbox, ['run'])).code).toBe(0);
      const output = join(dir, 'out', 'priv');
      const runDir = await onlyRun(output);
      const planted = await plantedIn(runDir);
      const before = await rawSnapshot(output);

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
      expect(await rawSnapshot(output)).toEqual(before);

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
        // The study's file in every study format the output writes, made from the de-identified
        // rows (the scan above opened them), each named by its README and index.html.
        const guide = await unzipText(zip, `${data}/README.md`);
        for (const file of ['wide/%.csv', 'xlsx/%.xlsx', 'sav/%.sav', 'dta/%.dta'].map((f) =>
          f.replace('%', study.link_id),
        )) {
          expect(list).toContain(`${data}/${file}`);
          expect(guide).toContain(`- **${file}**`);
          expect(index).toContain(`<a href="${file}">`);
        }
        const wide = csvRows(await unzipText(zip, `${data}/wide/${study.link_id}.csv`));
        expect(wide.map((row) => row.response_id).sort()).toEqual(
          responses.map((response) => response.response_id).sort(),
        );
        // No raw payloads, and the README does not speak of any.
        expect(guide).not.toContain('raw/<run id>');
        expect(guide).toContain('**provenance/runs.json**');
        await checkProject(dir, join(projects, `${study.link_id}.qdpx`), zip, study.link_id, study.id);
        const verified = await cli(dir, sandbox, ['verify', join(projects, `${study.link_id}.qdpx`)]);
        expect(verified.stdout).toContain('no personal data the detectors find');
        expect(verified.code).toBe(0);
      }
      // A package that kept some is failed by verify, naming the file and the kind.
      const project = join(projects, `${studies[0]?.link_id}.qdpx`);
      await writeFile(join(dir, 'extra.txt'), 'Mail me at someone@example.net');
      await run('zip', ['-j', project, join(dir, 'extra.txt')]);
      const failed = await cli(dir, sandbox, ['verify', project]);
      expect(failed.stdout).toMatch(/problem: .*\.qdpx!extra\.txt: 1 EMAIL match left/);
      expect(failed.stdout).not.toContain('someone@example.net');
      expect(failed.code).toBe(1);
    });
  }, 240_000);

  it('gives the same response the same pseudonym in every package and run, and other pseudonyms under another secret', async () => {
    await withTempDir(async (dir) => {
      const ids = async (to: string, secret: string) => {
        expect((await cli(shared, sandbox, ['archive', '--to', to], secret)).code).toBe(0);
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

describe('packages that keep identities', () => {
  it('say so when made with --identified, and hold what the profile would have removed', async () => {
    await withTempDir(async (dir) => {
      const output = join(shared, 'out', 'priv');
      const planted = await plantedIn(await onlyRun(output));
      const bags = join(dir, 'bags');
      const made = await cli(shared, sandbox, ['archive', '--to', bags, '--identified'], null);
      expect(made.code).toBe(0);
      expect((await scanOutput(bags, planted.responseIds)).length).toBeGreaterThan(0);
      for (const study of sandbox.studies()) {
        const bag = join(bags, study.link_id);
        expect(await readFile(join(bag, 'bag-info.txt'), 'utf8')).toMatch(/^Privacy: identified/m);
        expect(await readFile(join(bag, 'data/index.html'), 'utf8')).toContain('IDENTIFIED');
        const descriptor = JSON.parse(await readFile(join(bag, 'data/datapackage.json'), 'utf8'));
        expect(descriptor.privacy).toEqual({ identified: true, because: '--identified' });
        expect(await readFile(join(bag, 'data/README.md'), 'utf8')).toContain('made with --identified');
        const guide = await readFile(join(bag, 'data/README.md'), 'utf8');
        expect(guide).toContain(`- **wide/${study.link_id}.csv** (wide sheet)`);
        expect(guide).toContain('raw/<run id>');
      }
      const project = join(dir, 'projects');
      expect((await cli(shared, sandbox, ['qdpx', '--to', project, '--identified'], null)).code).toBe(0);
      const qde = await unzipText(join(project, `${sandbox.studies()[0]?.link_id}.qdpx`), 'project.qde');
      expect(qde).toContain('IDENTIFIED');
    });
  }, 120_000);

  it('keep the recordings under pseudonyms with recordings: keep, and say they identify people', async () => {
    await withTempDir(async (dir) => {
      await privacyPipeline(dir, sandbox, [...profile, 'recordings: keep']);
      const output = join(shared, 'out', 'priv');
      const bags = join(dir, 'bags');
      const made = await cli(dir, sandbox, ['archive', output, '--config', 'pipeline.yaml', '--to', bags]);
      expect(made.code).toBe(0);
      const planted = await plantedIn(await onlyRun(output));
      expect(await scanOutput(bags, planted.responseIds)).toEqual([]);
      let recordings = 0;
      for (const study of sandbox.studies()) {
        const bag = join(bags, study.link_id);
        expect(await readFile(join(bag, 'data/index.html'), 'utf8')).toContain(
          'Its recordings identify people',
        );
        const list = csvRows(await readFile(join(bag, 'data/recordings.csv'), 'utf8'));
        for (const row of list.filter((r) => r.in_bag === 'yes')) {
          expect(row.file).toMatch(/^recordings\/resp-[a-z2-7]{16}\//);
          await access(join(bag, 'data', row.file as string));
          recordings += 1;
        }
      }
      expect(recordings).toBeGreaterThan(0);
      const bag = join(bags, sandbox.studies()[1]?.link_id ?? '');
      expect((await cli(dir, sandbox, ['verify', bag])).code).toBe(0);
      const page = (await readdir(join(bag, 'data/conversations'))).find((f) => f.endsWith('.txt')) as string;
      await writeFile(
        join(bag, 'data/conversations', page),
        'Call +44 20 7946 0000 or see https://people.example.org/x',
      );
      const failed = await cli(dir, sandbox, ['verify', bag]);
      expect(failed.stdout).toContain(`problem: data/conversations/${page}: 1 PHONE match left`);
      expect(failed.stdout).toContain(`problem: data/conversations/${page}: 1 URL match left`);
      expect(failed.code).toBe(1);
    });
  }, 120_000);
});

describe('a profile that cannot be applied', () => {
  const refused = async (dir: string, args: string[], secret: string | null, message: RegExp) => {
    const result = await cli(dir, sandbox, args, secret);
    expect(result.stderr).toMatch(message);
    expect(result.code).toBe(2);
    await expect(access(join(dir, 'bags'))).rejects.toThrow();
  };

  it('stops with exit 2 naming what is wrong, and writes nothing', async () => {
    await withTempDir(async (dir) => {
      const output = join(shared, 'out', 'priv');
      const to = ['--to', join(dir, 'bags')];
      const use = async (lines: string[]) => {
        await privacyPipeline(dir, sandbox, lines);
        return ['archive', output, '--config', 'pipeline.yaml', ...to];
      };
      await refused(dir, await use(profile), null, /TEST_PSEUDONYM_KEY is not set/);
      await refused(dir, await use(profile), '', /TEST_PSEUDONYM_KEY is empty/);
      await refused(dir, await use(['text: { detect: [email, phnoe] }']), 'k', /did you mean phone\?/);
      await refused(dir, await use(['txt: {}']), 'k', /unknown key "txt" \(did you mean text\?/);
      await refused(dir, await use(['text: { terms: missing.txt }']), 'k', /missing\.txt: .*no such file/);
      await refused(
        dir,
        await use(["text: { patterns: ['PANEL-(\\d+'] }"]),
        'k',
        /patterns\[0\]: "PANEL-\(\\\\d\+" is not a valid regular expression/,
      );
      await privacyPipeline(dir, sandbox, ['text: { terms: terms.txt }']);
      await writeFile(
        join(dir, 'terms.txt'),
        Buffer.concat([Buffer.from('Ana\nJos'), Buffer.from([0xe9]), Buffer.from('\n')]),
      );
      await refused(
        dir,
        ['archive', output, '--config', 'pipeline.yaml', ...to],
        'k',
        /terms\.txt: line 2: not UTF-8/,
      );
      await privacyPipeline(dir, sandbox, profile);
      await refused(
        dir,
        ['archive', output, '--config', 'pipeline.yaml', ...to, '--linkage', join(dir, 'bags', 'l.csv')],
        'k',
        /inside the destination/,
      );
      // OUTPUT alone: its runs recorded a privacy: section, so the pipeline file must be named.
      await refused(
        dir,
        ['qdpx', output, '--to', join(dir, 'bags')],
        'k',
        /has a privacy: section; name its file/,
      );
    });
  }, 120_000);
});

/** The hashes and times of the raw output (runs/, current/, state/, latest), which a handoff never touches. */
async function rawSnapshot(output: string): Promise<Record<string, string>> {
  const all = await snapshot(output);
  const raw = Object.entries(all).filter(([path]) => /^(runs|current|state)(\/|$)|^latest/.test(path));
  expect(raw.length).toBeGreaterThan(10);
  return Object.fromEntries(raw);
}

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
