/**
 * What a person sees on a first run of the embedded sandbox, on a real terminal (tmux renders
 * the live bars) and in a CI log (no terminal): a line at once, bars that end, the warnings
 * of one kind in one line, a blank line, then the summary with the command's elapsed time.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, repoRoot, workdir } from '../helpers/cli.ts';

const run = promisify(execFile);
const bin = path.join(repoRoot, 'bin', 'study-export.js');

// The embedded sandbox's data set has long answers: an xlsx run cuts 18 cells to Excel's limit.
const pipeline = [
  'name: demo',
  'source:',
  '  base_url: sandbox',
  'output:',
  '  formats: [csv, xlsx]',
  'media:',
  '  enabled: false',
  '',
].join('\n');

const startLine =
  'run demo: starting the embedded sandbox (source.base_url is "sandbox"), then listing its studies';
const buildLine = 'study-export: building the command line (once after each update)';

interface Manifest {
  timings_ms: { total: number };
  warnings: { code: string }[];
}

async function manifestOf(dir: string): Promise<Manifest> {
  const runs = path.join(dir, 'out', 'demo', 'runs');
  const [id] = await readdir(runs);
  return JSON.parse(await readFile(path.join(runs, id ?? '', 'manifest.json'), 'utf8')) as Manifest;
}

/** The time of "run complete in 3.4s" (or "in 12s"), as said and in seconds. */
function elapsedOf(text: string): { said: string; seconds: number } {
  const match = /^run complete in ((\d+(?:\.\d)?)s)$/m.exec(text);
  expect(match, text).not.toBeNull();
  return { said: match?.[1] ?? '', seconds: Number(match?.[2]) };
}

/** Every elapsed "<number>s" said in the output (the run's folder and ETAs aside): there must be one. */
function times(text: string): string[] {
  const said = text
    .split('\n')
    .filter((line) => !line.startsWith('run: '))
    .join('\n');
  // An ETA is a time to come, not an elapsed one.
  return said.replace(/\beta \d+(\.\d+)?s\b/g, '').match(/\b\d+(\.\d+)?s\b/g) ?? [];
}

function expectEachWarningInManifest(manifest: Manifest): void {
  expect(manifest.warnings.filter((warning) => warning.code === 'xlsx_cell_cut')).toHaveLength(18);
}

describe('first run in a CI log (no terminal)', () => {
  let work: { dir: string; cleanup: () => Promise<void> };
  beforeAll(async () => {
    work = await workdir(pipeline);
  });
  afterAll(async () => {
    await work.cleanup();
  });

  it('says what starts, folds the warnings, leaves a blank line, and gives one elapsed time', async () => {
    const started = performance.now();
    const { stdout, stderr } = await run(process.execPath, [bin, 'run'], {
      cwd: work.dir,
      env: cleanEnv({ CI: 'true' }),
    });
    const wall = (performance.now() - started) / 1000;
    const lines = stderr.split('\n');
    expect(lines[0]).toBe(startLine);
    const cut = lines.filter((line) => line.includes('xlsx_cell_cut'));
    expect(cut).toHaveLength(1);
    expect(cut[0]).toMatch(/^warning: 18 × xlsx_cell_cut \(each in the manifest\), the first: xlsx\//);
    expect(lines.filter((line) => line.startsWith('warning:'))).toHaveLength(1);
    // The progress ends with a blank line; the summary (stdout) follows it.
    expect(stderr.endsWith('\n\n')).toBe(true);
    expect(stdout).toMatch(/^run complete in /);
    expect(lines).toContain('studies 5/5 (100%), done');

    // Where `run --help` says the state lives (help.test.ts checks the text).
    expect(await readdir(path.join(work.dir, 'out', 'demo', 'state'))).toHaveLength(5);
    expect(existsSync(path.join(work.dir, 'out', 'demo', 'state.json'))).toBe(false);

    const manifest = await manifestOf(work.dir);
    expectEachWarningInManifest(manifest);
    // The command's time: at least the pipeline's own, at most what the test measured.
    const elapsed = elapsedOf(stdout);
    expect(elapsed.seconds).toBeGreaterThanOrEqual(Math.floor(manifest.timings_ms.total / 1000));
    expect(elapsed.seconds).toBeLessThanOrEqual(wall + 0.5);
    expect(times(stderr + stdout)).toEqual([elapsed.said]);
  });
});

describe('first run on a terminal (tmux)', () => {
  let work: { dir: string; cleanup: () => Promise<void> };
  const socket = `study-export-test-${process.pid}`;
  const tmux = (...args: string[]) => run('tmux', ['-L', socket, ...args], { env: terminalEnv() });

  beforeAll(async () => {
    // A clear failure rather than "spawn tmux ENOENT" where it is missing.
    await run('tmux', ['-V']).catch(() => {
      throw new Error('this test needs tmux: apt-get install -y tmux (.ci/run installs it when missing)');
    });
    work = await workdir(pipeline);
  });
  afterAll(async () => {
    await tmux('kill-server').catch(() => undefined);
    await work.cleanup();
  });

  it('shows the start line, bars that end, one folded warning line, a blank line, one time', async () => {
    const command = `cd '${work.dir}' && '${process.execPath}' '${bin}' run; echo "exit $?"; sleep 120`;
    await tmux('new', '-d', '-x', '160', '-y', '100', 'sh', '-c', command);
    const screen = await waitForScreen(tmux, /^exit \d+$/m);
    const lines = screen.split('\n').map((line) => line.trimEnd());
    const first = lines.findIndex((line) => line !== '');
    // The bundle is built once per change of the sources, and says so first.
    const start = lines[first] === buildLine ? first + 1 : first;
    expect(lines[start]).toBe(startLine);
    expect(lines).toContain('exit 0');

    // The bars as the terminal shows them at the end: full, and the counters stopped.
    expect(lines[start + 1]).toMatch(/^studies {2}█{24} 5\/5 \(100%\), done$/);
    expect(lines).toContainEqual(expect.stringMatching(/^details {2}█{24} 125\/125 \(100%\) [\d.]+\/s$/));
    expect(lines).toContainEqual(expect.stringMatching(/^pages {29}\d+$/));
    expect(lines).toContainEqual(expect.stringMatching(/^warnings {26}18 \(listed by kind at the end\)$/));
    const cut = lines.filter((line) => line.includes('xlsx_cell_cut'));
    expect(cut).toHaveLength(1);
    // Cut to the terminal's width, so it stays one line.
    expect(cut[0]).toMatch(
      /^warning: 18 × xlsx_cell_cut \(each in the manifest\), the first: .*….*Parquet tables$/,
    );
    expect(cut[0]?.length).toBe(160);

    const summary = lines.findIndex((line) => line.startsWith('run complete in '));
    expect(lines[summary - 1]).toBe('');
    expect(lines[summary - 2]).toBe(cut[0]);
    const manifest = await manifestOf(work.dir);
    expectEachWarningInManifest(manifest);
    const elapsed = elapsedOf(screen);
    expect(elapsed.seconds).toBeGreaterThanOrEqual(Math.floor(manifest.timings_ms.total / 1000));
    expect(times(screen)).toEqual([elapsed.said]);
  });
});

/** A terminal's environment: no CI (which turns the bars off), a terminal type for tmux. */
function terminalEnv(): NodeJS.ProcessEnv {
  const env = cleanEnv({ TERM: 'xterm-256color' });
  delete env.CI;
  delete env.TMUX;
  return env;
}

/** The pane's text (scrollback included, wrapped lines joined) once it shows `done`. */
async function waitForScreen(
  tmux: (...args: string[]) => Promise<{ stdout: string }>,
  done: RegExp,
): Promise<string> {
  for (;;) {
    const { stdout } = await tmux('capture-pane', '-p', '-J', '-S', '-', '-t', '0');
    if (done.test(stdout)) return stdout;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
