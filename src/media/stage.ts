/**
 * The media stage: for each response, download every file its transcript links to (own
 * concurrency limit, separate from API requests), append each finished file to media.zip
 * and report one MediaOutcome per file. A file that fails after retries becomes a 'failed'
 * outcome and the rest goes on; an archive failure is not per file and is thrown.
 */
import { mkdir } from 'node:fs/promises';
import pLimit from 'p-limit';
import type { SingleResponse } from '../api/resources.ts';
import { RetryCounts, type RetryCountsSnapshot, type RetryPolicy, retryPolicy } from '../http/retry.ts';
import type { MediaArchive } from '../output/codecs/zip-writer.ts';
import type { MediaOutcome } from '../records.ts';
import { redact } from '../redact.ts';
import { diskFullError } from '../util/system-errors.ts';
import { downloadMedia } from './download.ts';
import { type FetchLink, fetchFile } from './fetch.ts';
import type { HashingThread } from './hashing-thread.ts';
import { fetchHls } from './hls.ts';
import { mediaJobs, type ResponseContext } from './jobs.ts';
import { ResponseLinks } from './links.ts';
import { defaultMemoryBudget, type MemoryBudget } from './memory-budget.ts';
import { type JobScratch, jobScratch } from './scratch.ts';
import type { FetchedJob, MediaJob, VideoMode } from './types.ts';

export interface MediaStageOptions {
  archive: MediaArchive;
  tmpDir: string;
  concurrency: number;
  video: VideoMode;
  /** Retries per file for network errors, 408/429/5xx and short bodies (the shared policy). */
  retries: number;
  /** Longest Retry-After honoured (default 60 s). */
  maxRetryAfterMs?: number;
  /** Backoff without Retry-After (defaults of src/http/retry.ts). */
  backoff?: Partial<RetryPolicy['backoff']>;
  timeoutMs: number;
  /** The whole download of one file (default one hour). */
  deadlineMs?: number;
  /**
   * Largest file downloaded (media.max_file_mib; default 4 GiB): one announced larger is
   * refused on its response headers, one without a Content-Length is stopped at the limit.
   * Any file within it is archived (zip64 past 4 GiB).
   */
  maxFileBytes?: number;
  /** Refresh links older than this before using them (default 50 minutes). */
  maxLinkAgeMs?: number;
  onBytes?: (n: number) => void;
  /**
   * Hashes the bodies (in memory or in temporary files) off the event loop; the run's,
   * shared with media.zip.
   */
  hashing?: HashingThread;
  /** Downloads held in memory instead of temporary files (default: 32 MiB, 8 MiB a file). */
  memory?: MemoryBudget;
  /** The clock links are issued on (fetchedAt uses it too). */
  now?: () => number;
}

export interface MediaCounters extends RetryCountsSnapshot {
  /** Media files archived (one per archived outcome). */
  files: number;
  /** Bytes written into media.zip entries, HLS segments included. */
  bytes: number;
  failed: number;
  /** Single-response calls made to renew links. */
  refreshes: number;
}

export interface MediaStage {
  archiveResponse(
    ctx: ResponseContext,
    detail: SingleResponse,
    fetchedAt: number,
    refresh: () => Promise<SingleResponse>,
  ): Promise<MediaOutcome[]>;
  counters(): MediaCounters;
}

export function createMediaStage(options: MediaStageOptions): MediaStage {
  const limit = pLimit(options.concurrency);
  const now = options.now ?? Date.now;
  const memory = options.memory ?? defaultMemoryBudget();
  const counters = { files: 0, bytes: 0, failed: 0, refreshes: 0 };
  const retryCounts = new RetryCounts();
  const policy = retryPolicy(options);
  let tmpReady: Promise<unknown> | null = null;

  /** The download every link of `job` goes through; its bodies are held by `scratch`. */
  function fetchLinkFor(job: MediaJob, scratch: JobScratch): FetchLink {
    const context = { study: job.study_id, response: job.response_id };
    return async (link, refresh) => {
      const fetched = await downloadMedia({
        link,
        refresh,
        dest: scratch.tempPath(),
        memory,
        ...(options.hashing ? { hashing: options.hashing } : {}),
        policy,
        counts: retryCounts,
        timeoutMs: options.timeoutMs,
        ...(options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs }),
        ...(options.maxFileBytes === undefined ? {} : { maxFileBytes: options.maxFileBytes }),
        ...(options.maxLinkAgeMs === undefined ? {} : { maxLinkAgeMs: options.maxLinkAgeMs }),
        now,
        ...(options.onBytes ? { onBytes: options.onBytes } : {}),
        context,
      });
      scratch.hold(fetched.body);
      return fetched;
    };
  }

  /** The download part of a job, inside the download limit; a failure is its outcome. */
  async function fetchJob(
    job: MediaJob,
    links: ResponseLinks,
    scratch: JobScratch,
  ): Promise<FetchedJob | Error> {
    try {
      tmpReady ??= mkdir(options.tmpDir, { recursive: true });
      await tmpReady;
      const fetchLink = fetchLinkFor(job, scratch);
      return job.kind === 'hls'
        ? await fetchHls(job, links, fetchLink)
        : await fetchFile(job, links, fetchLink);
    } catch (error) {
      // A full disk is the machine's, not this file's: it ends the run.
      if (diskFullError(error)) throw error;
      return error instanceof Error ? error : new Error(String(error));
    }
  }

  /** Appends a fetched job's entries; archive errors end the run, so they are not caught. */
  async function appendJob(fetched: FetchedJob): Promise<void> {
    for (const entry of fetched.entries) {
      await options.archive.add(entry.name, entry.body);
      counters.bytes += entry.bytes;
    }
    counters.files++;
  }

  /**
   * Downloads under the limit, then appends outside it: a finished download frees its slot
   * at once, so the next download starts while the single writer appends this one.
   */
  async function archiveJob(job: MediaJob, links: ResponseLinks): Promise<MediaOutcome> {
    options.hashing?.warmUp();
    const scratch = jobScratch(options.tmpDir, memory);
    const base = { turn: job.turn, kind: job.kind, answer_id: job.answer_id };
    try {
      const fetched = await limit(() => fetchJob(job, links, scratch));
      if (fetched instanceof Error) {
        counters.failed++;
        return { ...base, ...failedFields, error: describeFailure(fetched) };
      }
      await appendJob(fetched);
      return archivedOutcome(base, fetched);
    } finally {
      await scratch.release();
    }
  }

  return {
    async archiveResponse(ctx, detail, fetchedAt, refresh) {
      const links = new ResponseLinks(detail, fetchedAt, refresh, now, () => counters.refreshes++);
      const jobs = mediaJobs(ctx, detail, options.video);
      return Promise.all(jobs.map((job) => archiveJob(job, links)));
    },
    counters: () => ({ ...counters, ...retryCounts.snapshot() }),
  };
}

type OutcomeBase = Pick<MediaOutcome, 'turn' | 'kind' | 'answer_id'>;

function archivedOutcome(base: OutcomeBase, fetched: FetchedJob): MediaOutcome {
  return {
    ...base,
    file: fetched.file,
    content_type: fetched.contentType,
    bytes: fetched.bytes,
    sha256: fetched.sha256,
    status: 'archived',
    error: null,
  };
}

const failedFields = { file: null, content_type: null, bytes: null, sha256: null, status: 'failed' } as const;

/** The reason a file failed, safe to write: no query string of any URL. */
function describeFailure(error: unknown): string {
  return redact(error instanceof Error ? error.message : String(error));
}
