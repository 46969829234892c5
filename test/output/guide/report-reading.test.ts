/**
 * report.html for reading: parsed back by Python's html.parser (not ours), each study names
 * the concept of every concept-specific question, its sampled answers are rows of answers.csv
 * as written (for their question), the same answers on a second export, and its splits by
 * attribute and modality count the rows of attributes.csv and responses.csv.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formulaPattern } from '../../../src/output/formats/csv.ts';
import { SAMPLE_SIZE, SAMPLE_TEXT_CHARS } from '../../../src/output/guide/answer-sample.ts';
import { type Sandbox, startSandbox } from '../../../src/sandbox/index.ts';
import { withTempDir } from '../../helpers/environment.ts';
import { readCsv } from '../../helpers/readers.ts';
import { runAgainst, sandboxConfig } from '../../helpers/run.ts';

const run = promisify(execFile);

/** What html.parser sees: per study section, its questions, samples and tables. */
const pythonParse = `
import json, sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.studies, self.stack, self.text = [], [], None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == 'section' and (a.get('aria-labelledby') or '').startswith('study-') and 'class' not in a:
            self.studies.append({'heading': '', 'questions': [], 'tables': []})
        elif tag == 'section' and a.get('aria-labelledby') in ('problems', 'schema-changes'):
            self.studies.append({'heading': '', 'questions': [], 'tables': [], 'problems': True})
        elif tag == 'section' and a.get('class') == 'question':
            self.studies[-1]['questions'].append({'concept_id': a.get('data-concept-id'), 'heading': '', 'notes': [], 'answers': []})
        elif tag == 'figure' and a.get('class') == 'answer':
            self.studies[-1]['questions'][-1]['answers'].append({'response_id': a['data-response-id'], 'answer_id': a['data-answer-id'], 'cut': 'data-cut' in a, 'text': ''})
        elif tag == 'table' and self.studies:
            self.studies[-1]['tables'].append({'caption': '', 'rows': []})
        elif tag == 'tr' and self.studies and self.studies[-1]['tables']:
            self.studies[-1]['tables'][-1]['rows'].append([])
        self.stack.append(tag); self.text = ''
    def handle_endtag(self, tag):
        text, self.text = self.text, ''
        while self.stack and self.stack.pop() != tag: pass
        if not self.studies or text is None: return
        s = self.studies[-1]
        if tag == 'h2': s['heading'] = text
        elif tag == 'h4': s['questions'][-1]['heading'] = text
        elif tag == 'p' and s['questions'] and 'section' in self.stack: s['questions'][-1]['notes'].append(text)
        elif tag == 'blockquote': s['questions'][-1]['answers'][-1]['text'] = text
        elif tag == 'caption' and s['tables']: s['tables'][-1]['caption'] = text
        elif tag in ('th', 'td') and s['tables'] and s['tables'][-1]['rows']: s['tables'][-1]['rows'][-1].append(text)
    def handle_data(self, data):
        if self.text is not None: self.text += data
p = P(); p.feed(open(sys.argv[1], encoding='utf-8').read())
print(json.dumps([s for s in p.studies if 'problems' not in s]))
`;

interface Parsed {
  heading: string;
  questions: {
    concept_id: string;
    heading: string;
    notes: string[];
    answers: { response_id: string; answer_id: string; cut: boolean; text: string }[];
  }[];
  tables: { caption: string; rows: string[][] }[];
}

async function parseReport(path: string): Promise<Parsed[]> {
  const { stdout } = await run('python3', ['-c', pythonParse, path], { maxBuffer: 1 << 28 });
  return JSON.parse(stdout) as Parsed[];
}

type CsvRow = { [column: string]: string } & Record<
  | 'study_id'
  | 'response_id'
  | 'answer_id'
  | 'concept_id'
  | 'question'
  | 'answer'
  | 'key'
  | 'value'
  | 'summary',
  string
>;

/** A CSV's rows by column name, each cell as written before formula escaping (csv.ts). */
async function csvRows(path: string): Promise<CsvRow[]> {
  const [header, ...records] = (await readCsv(path)).records;
  const unescaped = (cell: string) =>
    cell.startsWith("'") && formulaPattern.test(cell.slice(1)) ? cell.slice(1) : cell;
  return records.map(
    (record) => Object.fromEntries(header!.map((name, i) => [name, unescaped(record[i] ?? '')])) as CsvRow,
  );
}

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 42, studies: 2, responses: 14 });
});
afterAll(async () => {
  await sandbox.close();
});

describe('report.html for reading', () => {
  it('names each concept, shows answers that are rows of answers.csv, and splits by attribute', async () => {
    await withTempDir(async (out) => {
      const { runDir } = await runAgainst(
        sandbox,
        sandboxConfig(sandbox, out, { output: { formats: ['csv'] } }),
      );
      const report = await parseReport(join(runDir!, 'report.html'));
      const answers = await csvRows(join(runDir!, 'answers.csv'));
      const attributes = await csvRows(join(runDir!, 'attributes.csv'));
      const responses = await csvRows(join(runDir!, 'responses.csv'));
      expect(report.length).toBe(sandbox.studies().length);
      for (const study of sandbox.studies()) {
        const section = report.find((s) => s.heading.startsWith(study.link_id))!;
        expect(section, study.link_id).toBeDefined();
        // The two concept questions share a text and are told apart by their concept.
        const concepts = section.questions.filter((q) => q.concept_id !== '');
        expect(concepts.map((q) => q.concept_id).sort()).toEqual(['concept-a', 'concept-b']);
        for (const q of concepts) {
          const name = q.concept_id === 'concept-a' ? 'concept A' : 'concept B';
          expect(q.heading).toMatch(
            /^\d+\. What do you like or dislike about this concept\? \(concept [AB]\)$/,
          );
          expect(q.heading.endsWith(`(${name})`)).toBe(true);
          expect(q.notes).toContain(`About ${name} (concept id ${q.concept_id}).`);
        }
        let sampled = 0;
        for (const q of section.questions) {
          const withText = answers.filter(
            (a) =>
              a.study_id === study.id &&
              a.concept_id === q.concept_id &&
              a.question === q.heading.replace(/^\d+\. /, '').replace(/ \(concept [AB]\)$/, '') &&
              a.answer.trim() !== '',
          );
          expect(q.answers.length).toBe(Math.min(SAMPLE_SIZE, withText.length));
          for (const shown of q.answers) {
            const row = answers.find(
              (a) => a.response_id === shown.response_id && a.answer_id === shown.answer_id,
            );
            expect(row, `${shown.response_id} ${shown.answer_id}`).toBeDefined();
            expect(row!.study_id).toBe(study.id);
            expect(row!.concept_id).toBe(q.concept_id);
            const expected = shown.cut
              ? Array.from(row!.answer).slice(0, SAMPLE_TEXT_CHARS).join('')
              : row!.answer;
            // An HTML parser reads a line end (CR LF, CR) as LF, as browsers do.
            expect(shown.text).toBe(expected.replace(/\r\n?/g, '\n'));
            sampled += 1;
          }
        }
        expect(sampled).toBeGreaterThan(0);
        // Responses by attribute value, counted from attributes.csv.
        const mine = attributes.filter((a) => a.study_id === study.id);
        const table = section.tables.find((t) => t.caption === 'Responses by utm_source')!;
        expect(table).toBeDefined();
        const counted = new Map<string, number>();
        for (const a of mine.filter((a) => a.key === 'utm_source'))
          counted.set(a.value, (counted.get(a.value) ?? 0) + 1);
        const shownCounts = new Map(table.rows.slice(1).map((row) => [row[0]!, Number(row[1])]));
        expect(shownCounts).toEqual(counted);
        // Modality: every response of the study, complete and in progress.
        const modality = section.tables.find((t) => t.caption.startsWith('Responses by modality'))!;
        const ofStudy = responses.filter((r) => r.study_id === study.id);
        expect(modality.rows.slice(1)).toEqual([
          [
            'text',
            String(ofStudy.length),
            String(ofStudy.filter((r) => r.summary !== '').length),
            String(ofStudy.filter((r) => r.summary === '').length),
          ],
        ]);
      }
      // A second export of the same data shows the same answers.
      await withTempDir(async (again) => {
        const second = await runAgainst(
          sandbox,
          sandboxConfig(sandbox, again, { output: { formats: ['csv'] } }),
        );
        const ids = (parsed: Parsed[]) =>
          parsed.flatMap((s) =>
            s.questions.flatMap((q) => q.answers.map((a) => `${a.response_id}/${a.answer_id}`)),
          );
        expect(ids(await parseReport(join(second.runDir!, 'report.html')))).toEqual(ids(report));
      });
      // The page stays self-contained and printable: no script, nothing fetched.
      const html = await readFile(join(runDir!, 'report.html'), 'utf8');
      expect(html).not.toMatch(/<script|<link|(src|href)="?https?:/);
      // Where every answer is: the answers table's file in each table format.
      expect(html.match(/answers\s+table \([^)]*\)/)?.[0]).toMatch(/\(answers\.csv or answers\.parquet\)$/);
    });
  });
});
