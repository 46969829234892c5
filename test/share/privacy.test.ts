/**
 * `share` with a privacy: section, run as users run it against the sandbox (over HTTP) with
 * personal data planted in answers, transcripts and URL parameters: no planted value and no
 * response id is found in any byte of the packages (a scan written apart from the redaction
 * code that opens zips, workbooks and Parquet values), the packages still read back whole
 * (Frictionless, SheetJS), say what was done, the linkage table maps every pseudonym back,
 * the ledger records each package, and --identified packages say so on their first page (as
 * chromium shows report.html offline).
 */
import { execFile } from 'node:child_process';
import { appendFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { parquetWriteBuffer } from 'hyparquet-writer';
import Papa from 'papaparse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nameOf } from '../../src/names.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { launchBrowser } from '../helpers/browser.ts';
import { runCli } from '../helpers/cli.ts';
import { validateDataPackage } from '../helpers/frictionless.ts';
import { scanOutput } from '../helpers/output-scan.ts';
import { readCsv } from '../helpers/readers.ts';
import { workbookProblems } from '../helpers/workbook.ts';

const planted = {
  email: 'jane.doe@example.org',
  phone: '+44 20 7946 0958',
  ip: '203.0.113.77',
  url: 'https://jane-doe.example.net/about',
  name: 'Jane Doe',
  employer: 'Acme Corp',
  panel: 'PANEL-778812',
};
const run = promisify(execFile);
const env = { TEST_KEY: '', TEST_PSEUDONYM_KEY: 'a secret only the controller has' };

let sandbox: Sandbox;
let dir: string;
let config: string;
let responseIds: string[];

function pipeline(baseUrl: string): string {
  return `name: priv
source:
  base_url: ${baseUrl}
  api_key_env: TEST_KEY
  retries: 0
output:
  dir: out
  formats: [csv, parquet, xlsx, sav, dta]
media:
  enabled: false
privacy:
  key_env: TEST_PSEUDONYM_KEY
  ids: pseudonymise
  attributes:
    utm_*: keep
    panel: pseudonymise
  text:
    detect: [email, phone, url, ip]
    terms: terms.txt
`;
}

/** Every study's first response gets the planted data in its answers, summary, transcript and URL parameters. */
function plant(sandbox: Sandbox): void {
  for (const study of sandbox.studies()) {
    const [first] = sandbox.responses(study.link_id);
    if (!first) continue;
    const said = ` Write to ${planted.email} or call ${planted.phone}; ${planted.name} at ${planted.employer}.`;
    sandbox.mutateListItem(study.link_id, first.id, (item) => {
      const attributes = item.attributes as Record<string, string>;
      attributes.email = planted.email;
      attributes.panel = planted.panel;
      for (const answer of (item.answers_array as { answer: string }[] | undefined) ?? [])
        answer.answer += said;
      const map = item.answers as Record<string, string>;
      for (const key of Object.keys(map)) map[key] += said;
      item.short_transcript = `${String(item.short_transcript)}${said}`;
      return item;
    });
    sandbox.mutateDetail(study.link_id, first.id, (detail) => {
      const transcript = detail.transcript as { user: string }[];
      const turn = transcript.find((row) => row.user !== '') ?? transcript[0];
      if (turn) turn.user += `${said} My address is ${planted.ip}, see ${planted.url}.`;
      return detail;
    });
  }
}

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 47, studies: 2, responses: 3 });
  plant(sandbox);
  responseIds = sandbox.studies().flatMap((study) => sandbox.responses(study.link_id).map((r) => r.id));
  dir = await mkdtemp(join(tmpdir(), 'share-privacy-'));
  config = join(dir, 'pipeline.yaml');
  await writeFile(config, pipeline(sandbox.base_url));
  await writeFile(join(dir, 'terms.txt'), `${planted.name}\n${planted.employer}\n`);
  env.TEST_KEY = sandbox.api_key;
  const run = await runCli(['run', '--config', config], { cwd: dir, env });
  expect(run.code, run.stderr).toBe(0);
}, 120_000);
afterAll(async () => {
  await sandbox?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('study-export share with a privacy profile', () => {
  it('hands off packages without the planted data or a response id, saying what was done', async () => {
    const to = join(dir, 'handoff');
    const linkage = join(dir, 'linkage.csv');
    const result = await runCli(['share', '--config', config, '--to', to, '--linkage', linkage], {
      cwd: dir,
      env,
    });
    expect(result.code, result.stderr).toBe(0);
    // The planted data was in the output: the scan finds it there.
    const inOutput = await scanOutput(join(dir, 'out', 'priv', 'current'), Object.values(planted));
    expect(new Set(inOutput.map((found) => found.needle))).toEqual(new Set(Object.values(planted)));
    // And in no byte of any package.
    expect(await scanOutput(to, [...Object.values(planted), ...responseIds])).toEqual([]);

    const links = Papa.parse<Record<string, string>>(await readFile(linkage, 'utf8'), {
      header: true,
      skipEmptyLines: true,
    }).data;
    const byPseudonym = new Map(
      links.filter((l) => l.kind === 'response').map((l) => [l.pseudonym, l.response_id]),
    );
    expect(links.some((l) => l.kind === 'attribute' && l.value === planted.panel)).toBe(true);
    const packages = await readdir(to);
    expect(packages.sort()).toEqual(
      sandbox
        .studies()
        .map((s) => nameOf(s.link_id))
        .sort(),
    );
    const handed: string[] = [];
    for (const name of packages) {
      const pkg = join(to, name);
      const report = await validateDataPackage(pkg);
      expect(report.errors).toEqual([]);
      const descriptor = JSON.parse(await readFile(join(pkg, 'datapackage.json'), 'utf8'));
      expect(descriptor.privacy.identified).toBe(false);
      for (const kind of ['EMAIL', 'PHONE', 'URL', 'IP', 'NAME'])
        expect(descriptor.privacy.counts.text[kind], kind).toBeGreaterThan(0);
      expect(descriptor.privacy.counts.attributes.pseudonymised).toBe(1);
      expect(descriptor.privacy.profile.ids).toBe('pseudonymise');
      const readme = await readFile(join(pkg, 'README.md'), 'utf8');
      expect(readme).toContain('## Privacy');
      expect(readme).toMatch(/replacements \d+ EMAIL/);
      expect(readme).not.toContain('IDENTIFIED');
      expect(await readFile(join(pkg, 'report.html'), 'utf8')).toMatch(
        /<section aria-label="Privacy" class="privacy">\n<p>De-identified by the pipeline(&#39;|')s privacy profile/,
      );
      // Every pseudonym in the package maps back to a response of the study; the tags hold.
      const [header, ...rows] = (await readCsv(join(pkg, 'responses.csv'))).records;
      const id = header!.indexOf('response_id');
      for (const row of rows) {
        expect(byPseudonym.has(row[id]!), row[id]).toBe(true);
        handed.push(byPseudonym.get(row[id]!)!);
      }
      const answers = await readFile(join(pkg, 'answers.csv'), 'utf8');
      const transcript = await readFile(join(pkg, 'transcript.csv'), 'utf8');
      const emailTag = /\[EMAIL-\d+\]/.exec(answers)?.[0];
      expect(emailTag).toBeDefined();
      expect(transcript).toContain(emailTag);
      const study = descriptor.resources.find((r: { name: string }) => r.name === 'studies');
      expect(study).toBeDefined();
      const [studyRow] = (await readCsv(join(pkg, 'studies.csv'))).records.slice(1);
      const book = await workbookProblems(pkg, [{ id: studyRow![0]!, link_id: studyRow![1]! }], {
        escapeFormulae: true,
      });
      expect(book.problems).toEqual([]);
    }
    expect(handed.sort()).toEqual([...responseIds].sort());

    // The ledger: a record per package, holding the pseudonyms beside refs of the ids.
    const ledger = join(dir, 'out', 'priv', 'handoffs');
    const records = await Promise.all(
      (await readdir(ledger)).map(async (file) => JSON.parse(await readFile(join(ledger, file), 'utf8'))),
    );
    expect(records.map((r) => [r.command, r.identified]).sort()).toEqual(
      packages.map(() => ['share', false]),
    );
    expect(records.flatMap((r) => r.responses.map((x: { pseudonym: string }) => x.pseudonym)).sort()).toEqual(
      [...byPseudonym.keys()].sort(),
    );
  }, 120_000);

  it('is verified: an untouched package, folder or zip, passes; personal data planted in its CSV, Parquet, workbook or zip fails it, named by file and kind', async () => {
    const [study] = sandbox.studies();
    const name = nameOf(study!.link_id);
    const share = async (to: string, ...more: string[]) => {
      const made = await runCli(
        ['share', '--config', config, '--study', study!.link_id, '--to', to, ...more],
        {
          cwd: dir,
          env,
        },
      );
      expect(made.code, made.stderr).toBe(0);
    };
    await share(join(dir, 'verified'));
    await share(join(dir, 'verified-zip'), '--zip');
    const pkg = join(dir, 'verified', name);
    const zip = join(dir, 'verified-zip', `${name}.zip`);
    for (const location of [pkg, zip]) {
      const verified = await runCli(['verify', location], { cwd: dir, env });
      expect(verified.stdout, verified.stderr).toContain('a valid package');
      expect(verified.stdout).toContain('no personal data the detectors find');
      expect(verified.code).toBe(0);
    }

    const email = 'someone.else@example.net';
    await appendFile(join(pkg, 'answers.csv'), `"x","${email}"\r\n`);
    const parquet = parquetWriteBuffer({
      columnData: [{ name: 'note', data: [`mail ${email}`], type: 'STRING' }],
    });
    await writeFile(join(pkg, 'responses.parquet'), Buffer.from(parquet));
    const extra = join(dir, 'extra');
    await mkdir(join(extra, name), { recursive: true });
    await writeFile(join(extra, 'sheet9.xml'), `<t>${email}</t>`);
    await run('zip', ['-j', join(pkg, 'xlsx', `${name}.xlsx`), join(extra, 'sheet9.xml')]);
    const failed = await runCli(['verify', pkg], { cwd: dir, env });
    expect(failed.stdout).toContain('problem: answers.csv: 1 EMAIL match left');
    expect(failed.stdout).toContain('problem: responses.parquet: 1 EMAIL match left');
    expect(failed.stdout).toContain(`problem: xlsx/${name}.xlsx!sheet9.xml: 1 EMAIL match left`);
    expect(failed.stdout).not.toContain(email);
    expect(failed.code).toBe(1);

    await writeFile(join(extra, name, 'notes.txt'), 'Call +44 20 7946 0000');
    await run('zip', [zip, `${name}/notes.txt`], { cwd: extra });
    const zipFailed = await runCli(['verify', zip], { cwd: dir, env });
    expect(zipFailed.stdout).toContain('problem: notes.txt: 1 PHONE match left');
    expect(zipFailed.stdout).toContain('problem: notes.txt: in the package but not in datapackage.json');
    expect(zipFailed.code).toBe(1);
  }, 120_000);

  it('says IDENTIFIED on the first page and in datapackage.json with --identified', async () => {
    const to = join(dir, 'identified');
    const [study] = sandbox.studies();
    const result = await runCli(
      ['share', '--config', config, '--study', study!.link_id, '--to', to, '--identified'],
      { cwd: dir, env },
    );
    expect(result.code, result.stderr).toBe(0);
    const pkg = join(to, nameOf(study!.link_id));
    const descriptor = JSON.parse(await readFile(join(pkg, 'datapackage.json'), 'utf8'));
    expect(descriptor.privacy).toEqual({ identified: true, because: '--identified' });
    expect(descriptor.description).toContain('Privacy: identified (made with --identified');
    const readme = await readFile(join(pkg, 'README.md'), 'utf8');
    const first = readme.split('\n').slice(0, 6).join('\n');
    expect(first).toContain('**IDENTIFIED');
    expect(first).toContain('made with --identified');
    // A share package never holds recordings, and its notice does not speak of any.
    expect(first).not.toMatch(/recording/i);
    expect(await readFile(join(pkg, 'report.html'), 'utf8')).toContain('<p class="identified" role="alert">');
    // In chromium, offline: the first thing under the title is the warning, shown.
    const browser = await launchBrowser();
    try {
      const page = await browser.context.newPage();
      await page.goto(pathToFileURL(join(pkg, 'report.html')).href);
      const alert = page.getByRole('alert');
      expect(await alert.isVisible()).toBe(true);
      expect(await alert.innerText()).toMatch(/^IDENTIFIED: /);
      expect(await page.locator('h1 + p').getAttribute('role')).toBe('alert');
    } finally {
      await browser.close();
    }
    expect((await scanOutput(pkg, [planted.email])).length).toBeGreaterThan(0);
  }, 120_000);
});
