/**
 * The media figures, as `npm run bench` and bench/media-only.ts measure them: one sandbox of
 * video studies, then rounds of our media step (its own process) followed by curl and the
 * same work by C tools on the same URLs. A round's ratios follow curl's own variation as much
 * as ours at this size (bench/README.md), so the figures are the medians of the rounds.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { curlWithParallel, mediaBaselines } from './curl.ts';
import type { MediaResult } from './media.ts';
import { runStep, startSandboxProcess, videoStudy } from './processes.ts';
import { medianBy, round } from './report.ts';

/** Media files of about 1 MB (the MP4 fixture is 2 KiB before scaling). */
export const mediaScale = 500;
export const mediaConcurrency = 4;
const latencyMs = 20;

export interface MediaRoundsInput {
  /** A scratch folder; each round's output goes in it and is removed after the round. */
  work: string;
  responses: number;
  rounds: number;
  /** Extra node flags of our media step (a CPU profile, say). */
  nodeArgs?: string[];
  log: (message: string) => void;
}

export interface MediaRounds {
  /** Medians over the rounds; null when curl is missing. */
  media_vs_curl: number | null;
  media_vs_same_work: number | null;
  /** The figures of the round whose media_vs_curl is the median. */
  media: Record<string, unknown>;
  rounds: Record<string, unknown>[];
}

export async function measureMediaRounds(input: MediaRoundsInput): Promise<MediaRounds> {
  const { responses, log } = input;
  const sandbox = await startSandboxProcess({ studies: 4, responses, latencyMs, mediaScale });
  const rounds: Record<string, unknown>[] = [];
  try {
    const study = await videoStudy(sandbox.info);
    log(`media: ${responses} video responses into media.zip (${mediaConcurrency} downloads at once)`);
    for (let i = 0; i < input.rounds; i++) {
      const out = join(input.work, `media-${i}`);
      const ours = await runStep<MediaResult>(
        'media',
        {
          sandbox: sandbox.info,
          studyId: study.id,
          linkId: study.link_id,
          out,
          concurrency: mediaConcurrency,
        },
        input.nodeArgs,
      );
      const baselines = await mediaBaselines(ours, ours.curlConfig, ours.curlDir, mediaConcurrency);
      if (typeof baselines.skipped === 'string') log(`  ${baselines.skipped}: those baselines skipped`);
      const figures = {
        files: ours.files,
        failed: ours.failed,
        mb: round(ours.bytes / 1e6, 1),
        ours_s: round(ours.ms / 1000, 3),
        // CPU of every thread of our process while timed: above the wall time means both cores.
        ours_cpu_s: round(ours.cpu_ms / 1000, 3),
        curl_version: curlWithParallel(),
        ...baselines,
      };
      log(`  round ${i + 1}/${input.rounds}: ${JSON.stringify(figures)}`);
      rounds.push(figures);
      await rm(out, { recursive: true, force: true });
    }
  } finally {
    await sandbox.stop();
  }
  const median = medianBy(rounds, (r) => Number(r.media_vs_curl)) as Record<string, unknown>;
  return {
    media_vs_curl: (median.media_vs_curl as number | null) ?? null,
    media_vs_same_work: medianOf(rounds.map((r) => r.media_vs_same_work as number | null)),
    media: median,
    rounds,
  };
}

function medianOf(values: (number | null)[]): number | null {
  const known = values.filter((value): value is number => typeof value === 'number');
  known.sort((a, b) => a - b);
  return known[Math.floor(known.length / 2)] ?? null;
}
