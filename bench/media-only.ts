/**
 * The media figure alone, as `npm run bench` measures it (bench/run.ts measureMedia):
 * `node --import tsx bench/media-only.ts [--responses 40] [--rounds 3] [--cpu-prof DIR]`.
 * Each round runs our media step in its own process and then curl on the same URLs;
 * the ratio of each round and their median are printed, the last stdout line is JSON.
 * With --cpu-prof the media child writes a V8 CPU profile into DIR.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { curlWithParallel, mediaBaselines } from './curl.ts';
import type { MediaResult } from './media.ts';
import { runStep, startSandboxProcess, videoStudy } from './processes.ts';
import { round } from './report.ts';

const mediaScale = 500;
const mediaConcurrency = 4;
const latencyMs = 20;

const log = (message: string) => process.stderr.write(`[media-bench] ${message}\n`);

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      responses: { type: 'string', default: '40' },
      rounds: { type: 'string', default: '3' },
      'cpu-prof': { type: 'string' },
    },
  });
  if (!curlWithParallel()) throw new Error('media bench: curl 7.66+ with --parallel is needed');
  const responses = Number(values.responses);
  const profDir = values['cpu-prof'];
  const nodeArgs = profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : [];
  const work = await mkdtemp(join(tmpdir(), 'study-export-media-bench-'));
  const sandbox = await startSandboxProcess({ studies: 4, responses, latencyMs, mediaScale });
  const ratios: number[] = [];
  const sameWork: number[] = [];
  const rounds: object[] = [];
  try {
    const study = await videoStudy(sandbox.info);
    for (let i = 0; i < Number(values.rounds); i++) {
      const out = join(work, `round-${i}`);
      const ours = await runStep<MediaResult>(
        'media',
        {
          sandbox: sandbox.info,
          studyId: study.id,
          linkId: study.link_id,
          out,
          concurrency: mediaConcurrency,
        },
        nodeArgs,
      );
      const baselines = await mediaBaselines(ours, ours.curlConfig, ours.curlDir, mediaConcurrency);
      const figures = {
        files: ours.files,
        failed: ours.failed,
        mb: round(ours.bytes / 1e6, 1),
        ours_s: round(ours.ms / 1000, 3),
        ours_cpu_s: round(ours.cpu_ms / 1000, 3),
        ...baselines,
      };
      ratios.push(Number(baselines.media_vs_curl));
      sameWork.push(Number(baselines.media_vs_same_work));
      rounds.push(figures);
      log(`round ${i + 1}: ${JSON.stringify(figures)}`);
      await rm(out, { recursive: true, force: true });
    }
  } finally {
    await sandbox.stop();
    await rm(work, { recursive: true, force: true });
  }
  process.stdout.write(
    `${JSON.stringify({ media_vs_curl: median(ratios), media_vs_same_work: median(sameWork), ratios, same_work_ratios: sameWork, rounds, loadavg: loadavg() })}\n`,
  );
}

await main();
