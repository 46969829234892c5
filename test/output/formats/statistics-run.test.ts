/**
 * The sav and dta formats in runs against the sandbox over HTTP: each study's .sav and .dta
 * hold its wide sheet value by value for ReadStat, PSPP and R's haven (the sandbox's
 * 40,000-character answers, emoji, right-to-left and CJK text, formula-like and empty answers,
 * in-progress responses); current/ holds them too; the names stay the same in a second run,
 * a reworded question keeps its name; verify checks them.
 */
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveOutput } from '../../../src/archive/index.ts';
import { verifyRun } from '../../../src/load/verify.ts';
import { describeCurrent } from '../../../src/publish/describe.ts';
import { type Sandbox, startSandbox } from '../../../src/sandbox/index.ts';
import { LocalStorage } from '../../../src/storage/local.ts';
import { withTempDir } from '../../helpers/environment.ts';
import { readCsv } from '../../helpers/readers.ts';
import { runAgainst, sandboxConfig } from '../../helpers/run.ts';
import {
  type DeclaredVariable,
  declaredVariables as declared,
  sheetDisagreements,
} from '../../helpers/statistics.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 48, studies: 2, responses: 12 });
});
afterAll(() => sandbox.close());

const formats = { output: { formats: ['csv', 'sav', 'dta'], csv: { escape_formulae: false } } };

/** Every reader's values of a file against the wide sheet's CSV. */
async function expectSheet(file: string, csv: string, variables: readonly DeclaredVariable[]): Promise<void> {
  expect(await sheetDisagreements(file, (await readCsv(csv)).records, variables)).toEqual([]);
}

describe('sav and dta in a run', () => {
  it("hold every study's wide sheet for three readers, in the run and in current/, with stable names", async () => {
    await withTempDir(async (dir) => {
      const out = join(dir, 'out');
      const first = await runAgainst(sandbox, sandboxConfig(sandbox, out, formats));
      const runDir = first.runDir!;
      const studies = sandbox.studies();
      let longest = 0;
      const before = new Map<string, Record<string, string | null>>();
      for (const study of studies) {
        const name = study.link_id;
        const { variables, labels } = await declared(join(runDir, 'dta', `${name}.dta`));
        before.set(name, labels);
        const csv = join(runDir, 'wide', `${name}.csv`);
        for (const format of ['sav', 'dta'])
          await expectSheet(join(runDir, format, `${name}.${format}`), csv, variables);
        const text = await readFile(csv, 'utf8');
        longest = Math.max(longest, ...text.split('","').map((cell) => cell.length));
        expect(Object.keys(labels).filter((n) => n.startsWith('q_'))).toContain('q_dg_3__concept_a');
      }
      // The sandbox's 40,000-character answer went through whole.
      expect(longest).toBeGreaterThan(39_000);
      expect((await verifyRun(runDir)).problems).toEqual([]);
      // The codebook lists every study's variables with their slots and questions.
      const codebook = await readFile(join(runDir, 'README.md'), 'utf8');
      for (const study of studies) expect(codebook).toContain(`### ${study.link_id}`);
      const slotRow =
        '| `q_dg_3__concept_a` | `dg-3` / `concept-a` | What do you like or dislike about this concept? \\[dg-3 / concept-a\\] |';
      expect(codebook).toContain(slotRow);
      expect(codebook).toMatch(/\| `a_utm_source` \| attribute `utm_source` \| attribute: utm\\_source \|/);

      // current/ holds them too, for the whole study.
      const study = studies[0]!;
      const id = study.id;
      const { variables } = await declared(
        join(out, 'test', 'current', 'dta', `study_id=${id}`, `${study.link_id}.dta`),
      );
      await expectSheet(
        join(out, 'test', 'current', 'sav', `study_id=${id}`, `${study.link_id}.sav`),
        join(out, 'test', 'current', 'wide', `study_id=${id}`, `${study.link_id}.csv`),
        variables,
      );

      // current/'s codebook lists the same variables; its descriptor describes the files.
      const currentDir = join(out, 'test', 'current');
      expect(await readFile(join(currentDir, 'README.md'), 'utf8')).toContain(slotRow);
      const described = JSON.parse(await readFile(join(currentDir, 'datapackage.json'), 'utf8')) as {
        resources: { path: string; description?: string; mediatype?: string }[];
      };
      for (const [format, words] of [
        ['sav', /SPSS system file/],
        ['dta', /Stata dataset/],
      ] as const) {
        const path = `${format}/study_id=${id}/${study.link_id}.${format}`;
        expect(described.resources.find((r) => r.path === path)?.description, path).toMatch(words);
      }

      // An archived bag carries them, made from the rows current/ holds (as share's package): its
      // wide sheet is current/'s byte for byte, and every reader's values of its files are the sheet's.
      await archiveOutput({
        output: join(out, 'test'),
        studies: [id],
        to: join(dir, 'bags'),
        form: 'folder',
        info: {},
      });
      const [bag] = await readdir(join(dir, 'bags'));
      const bagSheet = join(dir, 'bags', bag!, 'data', 'wide', `${study.link_id}.csv`);
      expect(await readFile(bagSheet, 'utf8')).toBe(
        await readFile(
          join(out, 'test', 'current', 'wide', `study_id=${id}`, `${study.link_id}.csv`),
          'utf8',
        ),
      );
      for (const format of ['sav', 'dta'])
        await expectSheet(
          join(dir, 'bags', bag!, 'data', format, `${study.link_id}.${format}`),
          bagSheet,
          variables,
        );

      // A reworded question keeps its variable's name; only its label follows the new text.
      sandbox.changeSchema(study.link_id, {
        kind: 'reword_question',
        position: 2,
        question: 'How do you do it now?',
      });
      sandbox.addResponse(study.link_id);
      const second = await runAgainst(sandbox, sandboxConfig(sandbox, out, formats));
      // An incremental run: its one response carries fewer attributes; the slots are the same.
      const after = (await declared(join(second.runDir!, 'dta', `${study.link_id}.dta`))).labels;
      const slots = (labels: Record<string, unknown>) =>
        Object.keys(labels).filter((n) => n.startsWith('q_'));
      expect(slots(after)).toEqual(slots(before.get(study.link_id)!));
      expect(slots(after)).toHaveLength(6);
      expect(after['q_dg_2']).toBe('How do you do it now?');
      expect(before.get(study.link_id)!['q_dg_2']).not.toBe('How do you do it now?');

      // current/'s codebook says what current/'s files hold (an incremental run keeps the question
      // text current/ had), and `describe` writes it again the same.
      const currentLabels = (
        await declared(join(currentDir, 'dta', `study_id=${id}`, `${study.link_id}.dta`))
      ).labels;
      const currentRow = `| \`q_dg_2\` | \`dg-2\` | ${currentLabels['q_dg_2']} |`;
      expect(await readFile(join(currentDir, 'README.md'), 'utf8')).toContain(currentRow);
      await rm(join(currentDir, 'README.md'));
      await describeCurrent(new LocalStorage(join(out, 'test')));
      const describedCodebook = await readFile(join(currentDir, 'README.md'), 'utf8');
      expect(describedCodebook).toContain(currentRow);
      expect(describedCodebook).toContain(slotRow);
      for (const other of studies) expect(describedCodebook).toContain(`### ${other.link_id}`);

      // verify reads the files' structure: a .sav cut short is named.
      const sav = join(second.runDir!, 'sav', `${study.link_id}.sav`);
      const bytes = await readFile(sav);
      await writeFile(sav, bytes.subarray(0, bytes.length - 9));
      const problems = (await verifyRun(second.runDir!)).problems;
      expect(problems.some((p) => p.includes(`sav/${study.link_id}.sav`))).toBe(true);
    });
  });
});
