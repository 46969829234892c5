/**
 * Hostile values end to end: ids with "../", slashes, backslashes, control characters,
 * unicode and great length; answers that look like formulas, carry control characters or
 * run to hundreds of kilobytes. File names on disk and in the zip stay inside their folder,
 * CSV cells that a spreadsheet would run are escaped, and Parquet keeps every exact value.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import { PENDING_DIR } from '../../src/output/layout.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { expectMediaRequestsKeyless, withTempDir } from '../helpers/environment.ts';
import { readCsv, readHyparquet } from '../helpers/readers.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';
import {
  expectEveryResponseOnce,
  expectNoSecretIn,
  readRejects,
  sandboxResponseIds,
} from '../helpers/run-files.ts';
import { readZip } from '../helpers/zip.ts';

let sandbox: Sandbox;

const hostileStudies = [
  {
    link_id: '../../etc/passwd',
    modality: 'audio' as const,
    responseIds: ['../up', '/abs', 'a\\b:c', 'ответ 🎤', 'y'.repeat(300)],
  },
  {
    link_id: `a/b/../c 研究 ${'x'.repeat(250)}`,
    modality: 'video' as const,
    responseIds: ['r/1/../etc', 'tab\there\nnewline', 'con'],
  },
  // An astral letter right where a name gets cut: a naive cut leaves half a surrogate pair.
  { link_id: `${'s'.repeat(99)}𝒜𝒜 cut`, modality: 'text' as const, responseIds: ['one', 'two'] },
  // Long in bytes rather than characters: three bytes each in UTF-8.
  { link_id: '研'.repeat(120), modality: 'audio' as const, responseIds: ['研究'.repeat(100)] },
  { link_id: '.hidden', modality: 'audio' as const, responseIds: ['.', '..', '..x', 'CON', 'a/b'] },
];

const formulae = [
  '=HYPERLINK("http://evil.example","click")',
  '+1+1',
  '-2-2',
  '@SUM(A1:A9)',
  '\tTAB',
  '\rCR',
];
const controls = 'bell\u0007 nul\u0000 esc\u001b[31m red del\u007f vt\u000b ff\u000c end';
const long = `${'long answer, with "quotes", commas and\nnewlines — '.repeat(4000)}𝒜 end`;
const injected = [...formulae, controls, long];

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 61, studies: 0 });
  for (const study of hostileStudies)
    sandbox.addStudy({ ...study, title: `Hostile ${study.link_id.slice(0, 10)}` });
  // The first response of the audio study carries every hostile answer and transcript text.
  const [first] = hostileStudies;
  sandbox.mutateListItem(first!.link_id, first!.responseIds[0]!, (item) => {
    const answers = item.answers_array as Record<string, unknown>[];
    const template = answers.find((a) => a.answer_id !== 'Summary') ?? answers[0]!;
    return {
      ...item,
      answers_array: injected.map((answer, i) => ({ ...template, answer_id: `hostile-${i}`, answer })),
    };
  });
  sandbox.mutateDetail(first!.link_id, first!.responseIds[0]!, (detail) => {
    const transcript = (detail.transcript as Record<string, unknown>[]).map((row, i) => ({
      ...row,
      user: injected[i % injected.length],
    }));
    return { ...detail, transcript };
  });
});
afterAll(async () => {
  await sandbox.close();
});

/** A path segment nobody can use to escape a folder or confuse a file system. */
function expectSafeSegment(segment: string, where: string): void {
  expect(segment, where).not.toMatch(/^\.\.?$/);
  expect(segment, where).not.toMatch(/[/\\:\u0000-\u001f\u007f]/);
  expect(segment.startsWith('.'), where).toBe(false);
  // A name cut inside a surrogate pair reaches the disk with U+FFFD in its place.
  expect(/\p{Surrogate}|\uFFFD/u.test(segment), `${where}: broken character`).toBe(false);
  expect(Buffer.byteLength(segment), where).toBeLessThanOrEqual(255);
}

it('hostile ids and answers: safe names on disk and in the zip, escaped CSV, exact Parquet', async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, 'out');
    const from = sandbox.requests.length;
    const result = await runAgainst(
      sandbox,
      sandboxConfig(sandbox, out, { media: { enabled: true, video: 'both' } }),
    );
    const runDir = result.runDir!;
    // Even "." and ".." (sent as %2E, which a URL would drop) are fetched and archived.
    expect(result.status).toBe('complete');
    expect(await readRejects(runDir)).toEqual([]);

    // Nothing was written beside or above the output folder.
    expect(await readdir(dir)).toEqual(['out']);
    for (const entry of await readdir(out, { recursive: true })) {
      // The tool's own record folder (src/pipeline/publication.ts) is hidden on purpose.
      const segments = entry.split('/').filter((segment, i) => !(i === 1 && segment === PENDING_DIR));
      for (const segment of segments) expectSafeSegment(segment, entry);
    }
    const wide = await readdir(join(runDir, 'wide'));
    expect(wide).toHaveLength(hostileStudies.length);
    expect(new Set(wide).size).toBe(hostileStudies.length);

    // The zip: a strict unzipper accepts every name; every entry sits in its study's folder.
    const entries = await readZip(join(runDir, 'media.zip'));
    expect(entries.length).toBeGreaterThan(0);
    for (const entry of entries)
      for (const segment of entry.name.split('/')) expectSafeSegment(segment, entry.name);
    const media = await readHyparquet(join(runDir, 'media.parquet'));
    expect(media.filter((m) => m.status !== 'archived')).toEqual([]);
    expect(media.some((m) => m.kind === 'audio') && media.some((m) => m.kind === 'video')).toBe(true);
    const names = new Set(entries.map((e) => e.name));
    for (const row of media) expect(names.has(row.file as string), row.file as string).toBe(true);
    // One folder per response, distinct across responses (no two ids collapse into one).
    const folderOf = new Map<unknown, Set<string>>();
    for (const row of media) {
      const folder = (row.file as string).split('/').slice(0, 2).join('/');
      folderOf.set(row.response_id, (folderOf.get(row.response_id) ?? new Set()).add(folder));
    }
    const folders = [...folderOf.values()].map((set) => [...set]);
    for (const set of folders) expect(set).toHaveLength(1);
    expect(new Set(folders.flat()).size).toBe(folders.length);

    // Parquet keeps the ids and the answers exactly.
    await expectEveryResponseOnce(runDir, sandboxResponseIds(sandbox));
    const responses = await readHyparquet(join(runDir, 'responses.parquet'));
    expect(new Set(responses.map((r) => r.link_id))).toEqual(new Set(hostileStudies.map((s) => s.link_id)));
    const answers = await readHyparquet(join(runDir, 'answers.parquet'));
    const hostileAnswers = answers.filter((a) => `${a.answer_id}`.startsWith('hostile-'));
    expect(hostileAnswers.map((a) => a.answer).sort()).toEqual([...injected].sort());
    const transcript = await readHyparquet(join(runDir, 'transcript.parquet'));
    const users = new Set(
      transcript.filter((t) => t.response_id === hostileStudies[0]!.responseIds[0]).map((t) => t.user),
    );
    for (const text of injected) expect(users.has(text), JSON.stringify(text.slice(0, 20))).toBe(true);

    // CSV: formula-like cells start with ', everything else reads back exactly.
    const csv = await readCsv(join(runDir, 'answers.csv'));
    const [header, ...records] = csv.records;
    const idColumn = header!.indexOf('answer_id');
    const answerColumn = header!.indexOf('answer');
    const csvAnswers = new Map(records.map((r) => [r[idColumn], r[answerColumn]]));
    injected.forEach((text, i) => {
      const cell = csvAnswers.get(`hostile-${i}`);
      expect(cell, `hostile-${i}`).toBe(/^[=+\-@\t\r\0]/.test(text) ? `'${text}` : text);
    });
    // No cell of any CSV file, wide sheets included, starts like a formula.
    const csvFiles = [
      ...(await readdir(runDir)).filter((name) => name.endsWith('.csv')),
      ...wide.map((name) => `wide/${name}`),
    ];
    expect(csvFiles.length).toBeGreaterThan(7);
    for (const file of csvFiles) {
      for (const record of (await readCsv(join(runDir, file))).records) {
        for (const cell of record)
          expect(/^[=+\-@\t\r\0]/.test(cell), `${file}: ${cell.slice(0, 30)}`).toBe(false);
      }
    }

    expect((await verifyRun(runDir)).problems).toEqual([]);
    expect(expectMediaRequestsKeyless(sandbox, from)).toBeGreaterThan(0);
    await expectNoSecretIn(out, sandbox.api_key);
  });
});
