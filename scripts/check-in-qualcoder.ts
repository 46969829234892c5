/**
 * What a researcher finds who imports `study-export qdpx` projects into QualCoder, checked
 * headless with QualCoder's own REFI-QDA importer:
 *
 *   QUALCODER_SRC=/path/to/QualCoder/src node --import tsx scripts/check-in-qualcoder.ts
 *
 * It exports the embedded sandbox twice into a temporary folder (video as MP4, then as HLS
 * only; CSV without formula escaping, so the tables hold the values as they are), writes every
 * study as a .qdpx, and for each runs scripts/qualcoder-import.py: a fresh QualCoder project,
 * the import with its dialogs answered from the script, then what QualCoder stored (sources,
 * codes, codings and the text each covers, cases and their attributes, recordings and their
 * transcripts) against the run's tables. Prints one line of figures per project; exit 1 when
 * QualCoder stored anything else.
 *
 * Needs a QualCoder checkout (github.com/ccbogel/QualCoder; nothing of it is copied here) and
 * Debian's python3-pyqt6, python3-pyqt6.qtmultimedia, python3-fitz and python3-pil for its
 * imports. Not part of the test suite: CI has no QualCoder.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const qualcoder = process.env.QUALCODER_SRC;
if (!qualcoder) {
  console.error("check-in-qualcoder: set QUALCODER_SRC to a QualCoder checkout's src/ folder");
  process.exit(2);
}
// Debian's Qt bindings live in the system Python, whatever python3 comes first on PATH.
const python = process.env.QUALCODER_PYTHON ?? '/usr/bin/python3';

function exportSandbox(dir: string, video: 'mp4' | 'hls'): { output: string; runDir: string } {
  mkdirSync(dir, { recursive: true });
  const config = join(dir, 'pipeline.yaml');
  writeFileSync(
    config,
    [
      'name: demo',
      'source: { base_url: sandbox }',
      `output: { dir: ${join(dir, 'out')}, formats: [csv], csv: { escape_formulae: false } }`,
      `media: { enabled: true, video: ${video} }`,
      '',
    ].join('\n'),
  );
  execFileSync('sh', [join(root, 'bin/study-export.js'), 'run', '--config', config], {
    cwd: root,
    stdio: 'pipe',
  });
  const output = join(dir, 'out', 'demo');
  const runs = join(output, 'runs');
  return { output, runDir: join(runs, readdirSync(runs).sort().at(-1) as string) };
}

const work = mkdtempSync(join(tmpdir(), 'check-in-qualcoder-'));
let ok = true;
try {
  for (const video of ['mp4', 'hls'] as const) {
    const dir = join(work, video);
    const { output, runDir } = exportSandbox(dir, video);
    const to = join(dir, 'projects');
    const listed = execFileSync('sh', [join(root, 'bin/study-export.js'), 'qdpx', output, '--to', to], {
      cwd: root,
      encoding: 'utf8',
    });
    for (const line of listed.trim().split('\n')) {
      const file = line.split('  ')[0] as string;
      const qde = execFileSync('unzip', ['-p', file, 'project.qde'], {
        encoding: 'utf8',
        maxBuffer: 1 << 28,
      });
      const studyId = /study id ([^)]+)\)/.exec(qde)?.[1] as string;
      const home = join(dir, 'home');
      const result = spawnSync(
        python,
        [join(root, 'scripts/qualcoder-import.py'), qualcoder, file, runDir, studyId],
        {
          encoding: 'utf8',
          env: { ...process.env, QT_QPA_PLATFORM: 'offscreen', HOME: home, XDG_RUNTIME_DIR: home },
          maxBuffer: 1 << 28,
        },
      );
      const last = result.stdout.trim().split('\n').at(-1) ?? '';
      let figures: Record<string, unknown>;
      try {
        figures = JSON.parse(last) as Record<string, unknown>;
      } catch {
        console.log(
          `BAD  ${file}: QualCoder's import failed\n${result.stderr.split('\n').slice(-15).join('\n')}`,
        );
        ok = false;
        continue;
      }
      const problems = figures.problems as string[];
      const { messages: _, problems: __, ...rest } = figures;
      console.log(
        `${problems.length === 0 ? 'ok  ' : 'BAD '} ${video} ${file.split('/').at(-1)}: ${JSON.stringify(rest)}`,
      );
      for (const problem of problems.slice(0, 10)) console.log(`     ${problem.slice(0, 300)}`);
      ok = ok && problems.length === 0;
    }
  }
  console.log(
    ok ? 'QualCoder stored every project as the tables hold it.' : 'QualCoder stored something else.',
  );
  process.exitCode = ok ? 0 : 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
