/**
 * `npm run bench:archive` (node --import tsx bench/archive.ts [--rounds 3]): `study-export
 * archive --tar` of a media-heavy study (the sandbox's video study, MP4 and HLS) against what
 * an archivist would script for the same bytes: unzip the study's folder out of each run's
 * media.zip, `sha256sum` and `sha512sum` every file, `tar` the folder. Both at the sandbox's
 * media scale S and 10 S, alternating, in the same run.
 *
 * Figures: archive_vs_shell = shell time / archive time at 10 S (the median round; 1.0 or more:
 * archive at least as fast); rss_10x_vs_1x = archive's peak RSS at 10 S over that at S (memory
 * flat in the bytes: at most 1.2). Writes bench/results/<UTC time>-archive.json and
 * latest-archive.json.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot, runStep, startSandboxProcess, videoStudy } from './processes.ts';
import { machine, medianBy, option, publishResults, round } from './report.ts';

const exec = promisify(execFile);
const log = (message: string) => process.stderr.write(`[bench:archive] ${message}\n`);

interface ArchiveStepResult {
  ms: number;
  bytes: number;
  files: number;
  maxrss_mb: number;
}

interface Prepared {
  output: string;
  linkId: string;
  studyId: string;
  bytes: number;
}

/** A sandbox at `scale`, exported once with MP4 and HLS into `dir`; its video study. */
async function prepare(dir: string, scale: number, responses: number): Promise<Prepared> {
  const sandbox = await startSandboxProcess({
    studies: 4,
    responses,
    latencyMs: 0,
    mediaScale: scale,
    seed: 5,
  });
  try {
    const study = await videoStudy(sandbox.info);
    const pipeline = join(dir, 'pipeline.yaml');
    await writeFile(
      pipeline,
      `name: bench\nsource: { base_url: "${sandbox.info.base_url}" }\nstudies: { include: ["${study.link_id}"] }\n` +
        `output: { dir: "${join(dir, 'out')}" }\nmedia: { enabled: true, video: both }\n`,
    );
    await exec(process.execPath, [join(repoRoot, 'bin', 'study-export.js'), 'run', '-c', pipeline], {
      cwd: dir,
      env: { ...process.env, STUDY_API_KEY: sandbox.info.api_key },
      maxBuffer: 1 << 26,
    });
    const output = join(dir, 'out', 'bench');
    let bytes = 0;
    for (const run of await readdir(join(output, 'runs'))) {
      const { stdout } = await exec('stat', ['-c', '%s', join(output, 'runs', run, 'media.zip')]);
      bytes += Number(stdout.trim());
    }
    return { output, linkId: study.link_id, studyId: study.id, bytes };
  } finally {
    await sandbox.stop();
  }
}

/** The archivist's script, timed: unzip, sha256sum, sha512sum, tar. */
async function shell(prepared: Prepared, work: string): Promise<number> {
  const dir = join(work, 'unzipped');
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const script = [
    'set -e',
    `for zip in "$1"/runs/*/media.zip; do unzip -q -o "$zip" "$2/*" -d "$3/data"; done`,
    'cd "$3"',
    'find data -type f -print0 | xargs -0 sha256sum > manifest-sha256.txt',
    'find data -type f -print0 | xargs -0 sha512sum > manifest-sha512.txt',
    'tar -cf ../shell.tar .',
  ].join('\n');
  const started = performance.now();
  await exec('sh', ['-c', script, 'sh', prepared.output, prepared.linkId, dir], { maxBuffer: 1 << 26 });
  const ms = performance.now() - started;
  await rm(dir, { recursive: true, force: true });
  await rm(join(work, 'shell.tar'), { force: true });
  return ms;
}

async function archiveRound(prepared: Prepared, work: string): Promise<ArchiveStepResult> {
  const to = join(work, 'bags');
  await rm(to, { recursive: true, force: true });
  const result = await runStep<ArchiveStepResult>('archive', {
    output: prepared.output,
    study: prepared.studyId,
    to,
  });
  await rm(to, { recursive: true, force: true });
  return result;
}

async function main(): Promise<void> {
  const rounds = option('rounds', 3);
  const scale = option('scale', 40);
  const responses = option('responses', 20);
  const work = await mkdtemp(join(tmpdir(), 'study-export-bench-archive-'));
  try {
    const sizes: Record<string, unknown> = {};
    const rss: Record<string, number> = {};
    let ratio = 0;
    for (const [label, factor] of [
      ['1x', 1],
      ['10x', 10],
    ] as const) {
      const dir = join(work, label);
      await mkdir(dir);
      log(`exporting the video study at media scale ${scale * factor}...`);
      const prepared = await prepare(dir, scale * factor, responses);
      const measured: { archive: ArchiveStepResult; shell_ms: number }[] = [];
      for (let round = 0; round < rounds; round++) {
        const archive = await archiveRound(prepared, dir);
        const shellMs = await shell(prepared, dir);
        log(
          `${label} round ${round + 1}: archive ${Math.round(archive.ms)} ms, shell ${Math.round(shellMs)} ms`,
        );
        measured.push({ archive, shell_ms: shellMs });
      }
      const median = medianBy(measured, (m) => m.shell_ms / m.archive.ms);
      if (!median) throw new Error('bench:archive: no round');
      rss[label] = Math.max(...measured.map((m) => m.archive.maxrss_mb));
      if (label === '10x') ratio = median.shell_ms / median.archive.ms;
      sizes[label] = {
        media_scale: scale * factor,
        media_zip_bytes: prepared.bytes,
        bag_bytes: median.archive.bytes,
        bag_files: median.archive.files,
        archive_s: round(median.archive.ms / 1000, 2),
        shell_s: round(median.shell_ms / 1000, 2),
        archive_vs_shell: round(median.shell_ms / median.archive.ms, 3),
        rounds: measured.map((m) => round(m.shell_ms / m.archive.ms, 3)),
        maxrss_mb: rss[label],
      };
      await rm(dir, { recursive: true, force: true });
    }
    const result = {
      machine: machine(),
      archive_vs_shell: round(ratio, 3),
      rss_10x_vs_1x: round((rss['10x'] ?? 0) / (rss['1x'] ?? 1), 3),
      sizes,
    };
    await publishResults(result, '-archive', log);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

await main();
