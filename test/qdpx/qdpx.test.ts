/**
 * `study-export qdpx` on outputs of the sandbox (text, audio, MP4 and HLS studies, whose first
 * responses hold the hostile texts: emoji, right-to-left scripts, formula-like and long
 * replies), each project checked by readers this project did not write: `unzip -t`, project.qde
 * by `xmllint --schema` against the official REFI-QDA schema, and test/qdpx/check_qdpx.py
 * (Python's zipfile and ElementTree) against the run's CSV tables: GUIDs unique and resolved,
 * internal paths present, every answer's coded passages cut by code points equal to the answer,
 * every attribute on its case, every recording's bytes. A second export gives the same GUIDs.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportQdpx } from '../../src/qdpx/export.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';

const run = promisify(execFile);
const schema = join(import.meta.dirname, '../fixtures/refi-qda/Project-mrt2019.xsd');
const checker = join(import.meta.dirname, 'check_qdpx.py');

interface Check {
  cases: number;
  codes: number;
  passages: number;
  answers: number;
  attributes: number;
  recordings: number;
  external: string[];
  guids: string[];
  problems: string[];
}

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 41, studies: 4, responses: 4 });
});
afterAll(async () => {
  await sandbox.close();
});

/** A run of the sandbox into `out` (CSV without formula escaping, so cells are the values). */
async function exportRun(out: string, video: 'mp4' | 'hls') {
  const config = sandboxConfig(sandbox, out, {
    output: { formats: ['csv'], csv: { escape_formulae: false } },
    media: { enabled: true, video },
  });
  const { runDir } = await runAgainst(sandbox, config);
  return { output: join(out, 'test'), runDir: runDir as string };
}

/** Every independent check of one .qdpx; the checker's figures. */
async function checkProject(file: string, tables: string, studyId: string): Promise<Check> {
  await run('unzip', ['-tq', file]);
  const { stdout: qde } = await run('unzip', ['-p', file, 'project.qde'], { maxBuffer: 64 << 20 });
  const dir = join(file, '..');
  const qdePath = join(dir, `${studyId}.qde`);
  await import('node:fs/promises').then((fs) => fs.writeFile(qdePath, qde));
  const lint = await run('xmllint', ['--noout', '--schema', schema, qdePath]);
  expect(lint.stderr).toContain('validates');
  const { stdout } = await run('python3', [checker, file, tables, studyId], { maxBuffer: 64 << 20 });
  return JSON.parse(stdout) as Check;
}

async function tableCount(tables: string, table: string, studyId: string, keep = (_: string) => true) {
  const { stdout } = await run('python3', [
    '-c',
    'import csv,sys\nrows=[r for r in csv.DictReader(open(sys.argv[1],encoding="utf-8",newline="")) if r["study_id"]==sys.argv[2]]\nprint("\\n".join(r.get("kind","")+" "+r.get("status","") for r in rows))',
    join(tables, `${table}.csv`),
    studyId,
  ]);
  return stdout.split('\n').filter((line) => line !== '' && keep(line)).length;
}

describe('study-export qdpx', () => {
  // The sandbox's primary key sees studies 0-2 (text, audio, video); the fourth is another key's.
  it('writes a valid project per study: text, audio and MP4 video, every answer coded where it was said', async () => {
    await withTempDir(async (dir) => {
      const { output, runDir } = await exportRun(join(dir, 'out'), 'mp4');
      const to = join(dir, 'projects');
      const result = await runCli(['qdpx', output, '--to', to]);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      const studies = sandbox.studies();
      expect(result.stdout.trim().split('\n')).toHaveLength(studies.length);
      expect((await readdir(to)).sort()).toEqual(studies.map((s) => `${s.link_id}.qdpx`).sort());
      for (const study of studies) {
        const check = await checkProject(join(to, `${study.link_id}.qdpx`), runDir, study.id);
        expect(check.problems).toEqual([]);
        expect(check.cases).toBe(await tableCount(runDir, 'responses', study.id));
        expect(check.answers).toBe(await tableCount(runDir, 'answers', study.id));
        expect(check.attributes).toBe(await tableCount(runDir, 'attributes', study.id));
        expect(check.attributes).toBeGreaterThan(0);
        expect(check.recordings).toBe(
          await tableCount(runDir, 'media', study.id, (l) => l.endsWith('archived')),
        );
        expect(check.external).toEqual([]);
      }
      const kinds = await Promise.all(studies.map((s) => tableCount(runDir, 'media', s.id)));
      expect(kinds.filter((n) => n > 0)).toHaveLength(2);
      const text = await readFile(join(runDir, 'answers.csv'), 'utf8');
      for (const hostile of ['😍🔥', 'التطبيق', 'האפליקציה', '=SUM(A1:A9)', '👩‍👩‍👧‍👦'])
        expect(text).toContain(hostile);
    });
  }, 120_000);

  it('joins an HLS-only video into one MPEG-TS source, and gives the same GUIDs when exported again', async () => {
    await withTempDir(async (dir) => {
      const { output, runDir } = await exportRun(join(dir, 'out'), 'hls');
      const video = sandbox.studies()[2]!;
      const first = await exportQdpx({ output, studies: [video.link_id], to: join(dir, 'a') });
      const again = await exportQdpx({ output, studies: [video.id], to: join(dir, 'b') });
      expect(first[0]?.recordings).toBeGreaterThan(0);
      const a = await checkProject(first[0]!.file, runDir, video.id);
      const b = await checkProject(again[0]!.file, runDir, video.id);
      expect(a.problems).toEqual([]);
      expect(a.recordings).toBe(
        await tableCount(runDir, 'media', video.id, (l) => l.startsWith('hls archived')),
      );
      expect(a.guids.length).toBeGreaterThan(a.passages * 2);
      expect(b.guids).toEqual(a.guids);
    });
  }, 120_000);

  it('keeps a recording over the size limit beside the project, with a relative path and a warning', async () => {
    await withTempDir(async (dir) => {
      const { output, runDir } = await exportRun(join(dir, 'out'), 'mp4');
      const audio = sandbox.studies()[1]!;
      const [done] = await exportQdpx({ output, studies: [audio.id], to: dir, internalLimitBytes: 0 });
      const check = await checkProject(done!.file, runDir, audio.id);
      expect(check.problems).toEqual([]);
      expect(done!.external).toBe(done!.recordings);
      expect(done!.warnings).toHaveLength(done!.recordings);
      expect(done!.warnings[0]?.message).toMatch(/over the 0-byte limit .* keep it beside the \.qdpx/);
      expect(check.external).toHaveLength(done!.recordings);
      const beside = await readdir(join(dir, `${audio.link_id} media`));
      expect(beside.sort()).toEqual(check.external.map((path) => path.replace('relative://', '')).sort());
      const { stdout: qde } = await run('unzip', ['-p', done!.file, 'project.qde']);
      expect(qde).toContain(`basePath="${join(dir, `${audio.link_id} media`)}/"`);
    });
  }, 120_000);
});
