/**
 * The media stage: for each response, download every file its transcript links to (own
 * concurrency limit, separate from API requests), append each finished file to media.zip
 * and report one MediaOutcome per file. A file that fails after retries becomes a 'failed'
 * outcome and the rest goes on; an archive failure is not per file and is thrown.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pLimit from 'p-limit';
import type { SingleResponse } from '../api/resources.ts';
import type { VideoMode } from '../config/schema.ts';
import { MediaError, redactUrl } from '../errors.ts';
import type { MediaArchive } from './archive.ts';
import { maxEntryBytes } from './archive.ts';
import {
  type DownloadedFile,
  type DownloadOptions,
  downloadToFile,
  type SignedLink,
  scrubUrls,
} from './download.ts';
import { bestVariant, type ParsedPlaylist, parsePlaylist, rewritePlaylist } from './hls.ts';
import { mediaJobs, mediaUrl, type ResponseContext } from './jobs.ts';
import { extensionFor, hlsFolder, hlsPlaylistFile, hlsSegmentFile, mediaEntryName } from './names.ts';
import type { MediaJob, MediaKind, MediaOutcome } from './types.ts';

export interface MediaStageOptions {
  archive: MediaArchive;
  tmpDir: string;
  concurrency: number;
  video: VideoMode;
  /** Retries per file for network errors, 408/429/5xx and short bodies. */
  retries: number;
  timeoutMs: number;
  /** Refresh links older than this before using them (default 50 minutes). */
  maxLinkAgeMs?: number;
  /** First retry delay, doubling each time (default 250 ms). */
  backoffMs?: number;
  onBytes?: (n: number) => void;
  /** The clock links are issued on (fetchedAt uses it too). */
  now?: () => number;
}

export interface MediaCounters {
  /** Media files archived (one per archived outcome). */
  files: number;
  /** Bytes written into media.zip entries, HLS segments included. */
  bytes: number;
  failed: number;
  /** Single-response calls made to renew links. */
  refreshes: number;
  retries: number;
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

interface TempFiles {
  path(): string;
  removeAll(): Promise<void>;
}

function tempFiles(dir: string): TempFiles {
  const made: string[] = [];
  return {
    path() {
      const file = join(dir, `${randomUUID()}.part`);
      made.push(file);
      return file;
    },
    async removeAll() {
      await Promise.all(made.map((file) => rm(file, { force: true })));
    },
  };
}

export function createMediaStage(options: MediaStageOptions): MediaStage {
  const limit = pLimit(options.concurrency);
  const now = options.now ?? Date.now;
  const counters: MediaCounters = { files: 0, bytes: 0, failed: 0, refreshes: 0, retries: 0 };
  let tmpReady: Promise<unknown> | null = null;

  function download(job: MediaJob, link: SignedLink, dest: string, refresh: DownloadOptions['refresh']) {
    return downloadToFile({
      link,
      refresh,
      dest,
      retries: options.retries,
      timeoutMs: options.timeoutMs,
      ...(options.maxLinkAgeMs === undefined ? {} : { maxLinkAgeMs: options.maxLinkAgeMs }),
      ...(options.backoffMs === undefined ? {} : { backoffMs: options.backoffMs }),
      now,
      ...(options.onBytes ? { onBytes: options.onBytes } : {}),
      onRetry: () => counters.retries++,
      context: { study: job.study_id, response: job.response_id },
    });
  }

  function checkSize(job: MediaJob, file: DownloadedFile): void {
    if (file.bytes >= maxEntryBytes) {
      throw new MediaError(`${file.bytes} bytes: files of 4 GiB or more are not archived`, {
        context: { study: job.study_id, response: job.response_id, url: redactUrl(file.link.url) },
      });
    }
  }

  async function archiveFile(job: MediaJob, links: ResponseLinks, temp: TempFiles) {
    const fetched = await download(job, links.current(job.turn, job.kind), temp.path(), (stale) =>
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
    return { file, fetched, entries: [{ name: file, path: fetched.file, bytes: fetched.bytes }] };
  }

  /** Downloads a playlist (following a master playlist to its best variant) and parses it. */
  async function loadPlaylist(
    job: MediaJob,
    link: SignedLink,
    temp: TempFiles,
    refresh: DownloadOptions['refresh'],
  ) {
    let fetched = await download(job, link, temp.path(), refresh);
    let playlist = await readPlaylist(fetched);
    const variant = bestVariant(playlist);
    if (variant) {
      const variantLink = { url: new URL(variant, fetched.link.url).href, issuedAt: fetched.link.issuedAt };
      fetched = await download(job, variantLink, temp.path(), async (stale) => {
        const master = await loadPlaylist(job, await refresh(stale), temp, refresh);
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
    return parsePlaylist(await readFile(fetched.file, 'utf8'));
  }

  async function archiveHls(job: MediaJob, links: ResponseLinks, temp: TempFiles) {
    const refreshPlaylist: DownloadOptions['refresh'] = (stale) => links.fresh(stale, job.turn, 'hls');
    let { fetched, playlist } = await loadPlaylist(
      job,
      links.current(job.turn, 'hls'),
      temp,
      refreshPlaylist,
    );
    const folder = hlsFolder(job.link_id, job.response_id, job.turn);
    const entries: { name: string; path: string; bytes: number }[] = [];
    const localNames: string[] = [];
    const count = playlist.references.length;
    for (let i = 0; i < count; i++) {
      const uri = playlist.references[i]?.uri ?? '';
      const segmentLink = { url: new URL(uri, fetched.link.url).href, issuedAt: fetched.link.issuedAt };
      // A refused segment link: renew the playlist (and with it every segment's link).
      const segment = await download(job, segmentLink, temp.path(), async () => {
        ({ fetched, playlist } = await loadPlaylist(
          job,
          await refreshPlaylist(fetched.link),
          temp,
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
      entries.push({ name: `${folder}/${local}`, path: segment.file, bytes: segment.bytes });
    }
    const text = rewritePlaylist(playlist, localNames);
    const playlistFile = temp.path();
    await writeFile(playlistFile, text, 'utf8');
    const file = `${folder}/${hlsPlaylistFile}`;
    const bytes = Buffer.byteLength(text, 'utf8');
    entries.push({ name: file, path: playlistFile, bytes });
    const sha256 = createHash('sha256').update(text, 'utf8').digest('hex');
    return { file, fetched: { ...fetched, bytes, sha256, file: playlistFile }, entries };
  }

  type Fetched = Awaited<ReturnType<typeof archiveFile>>;

  /** The download part of a job, inside the download limit; a failure is its outcome. */
  async function fetchJob(job: MediaJob, links: ResponseLinks, temp: TempFiles): Promise<Fetched | Error> {
    try {
      tmpReady ??= mkdir(options.tmpDir, { recursive: true });
      await tmpReady;
      return job.kind === 'hls' ? await archiveHls(job, links, temp) : await archiveFile(job, links, temp);
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  }

  /**
   * Downloads under the limit, then appends outside it: a finished download frees its slot
   * at once, so the next download starts while the single writer appends this one.
   */
  async function archiveJob(job: MediaJob, links: ResponseLinks): Promise<MediaOutcome> {
    const temp = tempFiles(options.tmpDir);
    const base = { turn: job.turn, kind: job.kind, answer_id: job.answer_id };
    try {
      const result = await limit(() => fetchJob(job, links, temp));
      if (result instanceof Error) {
        counters.failed++;
        return { ...base, ...failedFields, error: describeFailure(result) };
      }
      // Archive errors are not this file's: they end the run, so they are not caught here.
      for (const entry of result.entries) {
        await options.archive.add(entry.name, entry.path);
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
      await temp.removeAll();
    }
  }

  return {
    async archiveResponse(ctx, detail, fetchedAt, refresh) {
      const links = new ResponseLinks(detail, fetchedAt, refresh, now, () => counters.refreshes++);
      const jobs = mediaJobs(ctx, detail, options.video);
      return Promise.all(jobs.map((job) => archiveJob(job, links)));
    },
    counters: () => ({ ...counters }),
  };
}

const failedFields = { file: null, content_type: null, bytes: null, sha256: null, status: 'failed' } as const;

/** The reason a file failed, safe to write: no query string of any URL. */
function describeFailure(error: unknown): string {
  return scrubUrls(error instanceof Error ? error.message : String(error));
}
