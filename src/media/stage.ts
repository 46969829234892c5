/**
 * The media stage: for each response, download every file its transcript links to (own
 * concurrency limit, separate from API requests), append each finished file to media.zip
 * and report one MediaOutcome per file. A file that fails after retries becomes a 'failed'
 * outcome and the rest goes on; an archive failure is not per file and is thrown.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import pLimit from 'p-limit';
import type { SingleResponse } from '../api/resources.ts';
import type { VideoMode } from '../config/schema.ts';
import { MediaError } from '../errors.ts';
import { RetryCounts, type RetryCountsSnapshot, type RetryPolicy, retryPolicy } from '../http/retry.ts';
import type { MediaKind, MediaOutcome } from '../records.ts';
import { redact } from '../redact.ts';
import type { MediaArchive } from './archive.ts';
import { maxEntryBytes } from './archive.ts';
import { type DownloadedFile, type DownloadOptions, downloadMedia, type SignedLink } from './download.ts';
import { bestVariant, type ParsedPlaylist, parsePlaylist, rewritePlaylist } from './hls.ts';
import { mediaJobs, mediaUrl, type ResponseContext } from './jobs.ts';
import { defaultMemoryBudget, type MemoryBudget } from './memory-budget.ts';
import { extensionFor, hlsFolder, hlsPlaylistFile, hlsSegmentFile, mediaEntryName } from './names.ts';
import type { MediaBody, MediaJob } from './types.ts';

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
  /** Refresh links older than this before using them (default 50 minutes). */
  maxLinkAgeMs?: number;
  onBytes?: (n: number) => void;
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

/** Largest playlist read into memory (playlists are text, a few KiB). */
const maxPlaylistBytes = 4 * 1024 * 1024;

/**
 * The current links of one response. Jobs that find their link refused or old ask here;
 * one refresh serves every job of the response (a job whose link was already renewed by
 * another gets the new one without another API call).
 */
class ResponseLinks {
  private inflight: Promise<void> | null = null;

  constructor(
    private detail: SingleResponse,
    private fetchedAt: number,
    private readonly refreshDetail: () => Promise<SingleResponse>,
    private readonly now: () => number,
    private readonly counted: () => void,
  ) {}

  current(turn: number, kind: MediaKind): SignedLink {
    const url = mediaUrl(this.detail.transcript[turn - 1], kind);
    if (!url) throw new MediaError(`the refreshed response has no ${kind} at turn ${turn} any more`);
    return { url, issuedAt: this.fetchedAt };
  }

  async fresh(stale: SignedLink, turn: number, kind: MediaKind): Promise<SignedLink> {
    const known = this.current(turn, kind);
    if (known.url !== stale.url) return known;
    this.inflight ??= this.renew().finally(() => {
      this.inflight = null;
    });
    await this.inflight;
    return this.current(turn, kind);
  }

  private async renew(): Promise<void> {
    this.counted();
    const detail = await this.refreshDetail();
    this.detail = detail;
    this.fetchedAt = this.now();
  }
}

/** What one job holds until its entries are in the zip: temporary files and budgeted memory. */
interface JobScratch {
  tempPath(): string;
  /** Records a downloaded body: release() gives its memory back or removes its file. */
  hold(body: MediaBody): void;
  release(): Promise<void>;
}

/** A failed download removes its own partial file, so only held file bodies are left to remove. */
function jobScratch(dir: string, memory: MemoryBudget): JobScratch {
  const files: string[] = [];
  let heldBytes = 0;
  return {
    tempPath: () => join(dir, `${randomUUID()}.part`),
    hold(body) {
      if (body.kind === 'memory') heldBytes += body.data.length;
      else files.push(body.path);
    },
    async release() {
      memory.give(heldBytes);
      heldBytes = 0;
      await Promise.all(files.map((file) => rm(file, { force: true })));
    },
  };
}

/** A playlist's text, wherever its body is. */
async function bodyText(body: MediaBody): Promise<string> {
  return body.kind === 'memory' ? body.data.toString('utf8') : readFile(body.path, 'utf8');
}

export function createMediaStage(options: MediaStageOptions): MediaStage {
  const limit = pLimit(options.concurrency);
  const now = options.now ?? Date.now;
  const memory = options.memory ?? defaultMemoryBudget();
  const counters = { files: 0, bytes: 0, failed: 0, refreshes: 0 };
  const retryCounts = new RetryCounts();
  const policy = retryPolicy(options);
  let tmpReady: Promise<unknown> | null = null;

  async function download(
    job: MediaJob,
    link: SignedLink,
    scratch: JobScratch,
    refresh: DownloadOptions['refresh'],
  ): Promise<DownloadedFile> {
    const fetched = await downloadMedia({
      link,
      refresh,
      dest: scratch.tempPath(),
      memory,
      policy,
      counts: retryCounts,
      timeoutMs: options.timeoutMs,
      ...(options.maxLinkAgeMs === undefined ? {} : { maxLinkAgeMs: options.maxLinkAgeMs }),
      now,
      ...(options.onBytes ? { onBytes: options.onBytes } : {}),
      context: { study: job.study_id, response: job.response_id },
    });
    scratch.hold(fetched.body);
    return fetched;
  }

  function checkSize(job: MediaJob, file: DownloadedFile): void {
    if (file.bytes >= maxEntryBytes) {
      throw new MediaError(`${file.bytes} bytes: files of 4 GiB or more are not archived`, {
        context: { study: job.study_id, response: job.response_id, url: redact(file.link.url) },
      });
    }
  }

  async function archiveFile(job: MediaJob, links: ResponseLinks, scratch: JobScratch) {
    const fetched = await download(job, links.current(job.turn, job.kind), scratch, (stale) =>
      links.fresh(stale, job.turn, job.kind),
    );
    checkSize(job, fetched);
    const file = mediaEntryName(
      job.link_id,
      job.response_id,
      job.turn,
      job.kind,
      extensionFor(fetched.contentType),
    );
    return { file, fetched, entries: [{ name: file, body: fetched.body, bytes: fetched.bytes }] };
  }

  /** Downloads a playlist (following a master playlist to its best variant) and parses it. */
  async function loadPlaylist(
    job: MediaJob,
    link: SignedLink,
    scratch: JobScratch,
    refresh: DownloadOptions['refresh'],
  ) {
    let fetched = await download(job, link, scratch, refresh);
    let playlist = await readPlaylist(fetched);
    const variant = bestVariant(playlist);
    if (variant) {
      const variantLink = { url: new URL(variant, fetched.link.url).href, issuedAt: fetched.link.issuedAt };
      fetched = await download(job, variantLink, scratch, async (stale) => {
        const master = await loadPlaylist(job, await refresh(stale), scratch, refresh);
        return master.fetched.link;
      });
      playlist = await readPlaylist(fetched);
      if (bestVariant(playlist)) throw new MediaError('nested master playlists are not supported');
    }
    return { fetched, playlist };
  }

  async function readPlaylist(fetched: DownloadedFile): Promise<ParsedPlaylist> {
    if (fetched.bytes > maxPlaylistBytes)
      throw new MediaError(`playlist of ${fetched.bytes} bytes is too large`);
    return parsePlaylist(await bodyText(fetched.body));
  }

  async function archiveHls(job: MediaJob, links: ResponseLinks, scratch: JobScratch) {
    const refreshPlaylist: DownloadOptions['refresh'] = (stale) => links.fresh(stale, job.turn, 'hls');
    let { fetched, playlist } = await loadPlaylist(
      job,
      links.current(job.turn, 'hls'),
      scratch,
      refreshPlaylist,
    );
    const folder = hlsFolder(job.link_id, job.response_id, job.turn);
    const entries: { name: string; body: MediaBody; bytes: number }[] = [];
    const localNames: string[] = [];
    const count = playlist.references.length;
    for (let i = 0; i < count; i++) {
      const uri = playlist.references[i]?.uri ?? '';
      const segmentLink = { url: new URL(uri, fetched.link.url).href, issuedAt: fetched.link.issuedAt };
      // A refused segment link: renew the playlist (and with it every segment's link).
      const segment = await download(job, segmentLink, scratch, async () => {
        ({ fetched, playlist } = await loadPlaylist(
          job,
          await refreshPlaylist(fetched.link),
          scratch,
          refreshPlaylist,
        ));
        const renewed = playlist.references[i];
        if (playlist.references.length !== count || !renewed)
          throw new MediaError('the renewed playlist changed');
        return { url: new URL(renewed.uri, fetched.link.url).href, issuedAt: fetched.link.issuedAt };
      });
      checkSize(job, segment);
      const local = hlsSegmentFile(i, extensionFor(segment.contentType));
      localNames.push(local);
      entries.push({ name: `${folder}/${local}`, body: segment.body, bytes: segment.bytes });
    }
    // The rewritten playlist is a few KiB of text: kept in memory, outside the budget.
    const text = Buffer.from(rewritePlaylist(playlist, localNames), 'utf8');
    const body: MediaBody = { kind: 'memory', data: text };
    const file = `${folder}/${hlsPlaylistFile}`;
    entries.push({ name: file, body, bytes: text.length });
    const sha256 = createHash('sha256').update(text).digest('hex');
    return { file, fetched: { ...fetched, bytes: text.length, sha256, body }, entries };
  }

  type Fetched = Awaited<ReturnType<typeof archiveFile>>;

  /** The download part of a job, inside the download limit; a failure is its outcome. */
  async function fetchJob(
    job: MediaJob,
    links: ResponseLinks,
    scratch: JobScratch,
  ): Promise<Fetched | Error> {
    try {
      tmpReady ??= mkdir(options.tmpDir, { recursive: true });
      await tmpReady;
      return job.kind === 'hls'
        ? await archiveHls(job, links, scratch)
        : await archiveFile(job, links, scratch);
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  }

  /**
   * Downloads under the limit, then appends outside it: a finished download frees its slot
   * at once, so the next download starts while the single writer appends this one.
   */
  async function archiveJob(job: MediaJob, links: ResponseLinks): Promise<MediaOutcome> {
    const scratch = jobScratch(options.tmpDir, memory);
    const base = { turn: job.turn, kind: job.kind, answer_id: job.answer_id };
    try {
      const result = await limit(() => fetchJob(job, links, scratch));
      if (result instanceof Error) {
        counters.failed++;
        return { ...base, ...failedFields, error: describeFailure(result) };
      }
      // Archive errors are not this file's: they end the run, so they are not caught here.
      for (const entry of result.entries) {
        await options.archive.add(entry.name, entry.body);
        counters.bytes += entry.bytes;
      }
      counters.files++;
      return {
        ...base,
        file: result.file,
        content_type: result.fetched.contentType,
        bytes: result.fetched.bytes,
        sha256: result.fetched.sha256,
        status: 'archived',
        error: null,
      };
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

const failedFields = { file: null, content_type: null, bytes: null, sha256: null, status: 'failed' } as const;

/** The reason a file failed, safe to write: no query string of any URL. */
function describeFailure(error: unknown): string {
  return redact(error instanceof Error ? error.message : String(error));
}
