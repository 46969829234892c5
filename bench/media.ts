/**
 * Our media download for one study: the media stage (own limit of `concurrency` downloads)
 * streaming every file into media.zip, timed alone. The details are fetched first, outside
 * the timing; their signed URLs are also written to a curl config file, so the curl
 * baseline fetches exactly the same files.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SingleResponse } from '../src/api/resources.ts';
import { HashingThread } from '../src/media/hashing-thread.ts';
import { mediaJobs } from '../src/media/jobs.ts';
import { createMediaStage } from '../src/media/stage.ts';
import { openMediaArchive } from '../src/output/codecs/zip-writer.ts';
import { LocalStorage } from '../src/storage/local.ts';
import { forEachBounded } from '../src/util/concurrency.ts';
import type { SandboxInfo } from './processes.ts';

export interface MediaInput {
  sandbox: SandboxInfo;
  studyId: string;
  linkId: string;
  out: string;
  concurrency: number;
}

export interface MediaResult {
  ms: number;
  /** CPU time of the whole process (every thread: event loop, thread pool, GC) while timed. */
  cpu_ms: number;
  /** Bytes of the media files (HLS not used: video mode mp4). */
  bytes: number;
  files: number;
  failed: number;
  zip_bytes: number;
  /** curl config (url/output pairs) for the same files. */
  curlConfig: string;
  curlDir: string;
}

async function fetchDetails(input: MediaInput): Promise<SingleResponse[]> {
  const { base_url, api_key } = input.sandbox;
  const get = async (path: string) => {
    const response = await fetch(`${base_url}/api/public${path}`, { headers: { 'x-api-key': api_key } });
    if (!response.ok) throw new Error(`media bench: HTTP ${response.status} from ${path}`);
    return (await response.json()) as unknown;
  };
  const link = encodeURIComponent(input.linkId);
  const ids: string[] = [];
  for (let page = 0; ; page++) {
    const items = (await get(`/responses/${link}?page=${page}&per_page=1000`)) as { id: string }[];
    if (items.length === 0) break;
    ids.push(...items.map((item) => item.id));
  }
  return Promise.all(
    ids.map(async (id) => SingleResponse.parse(await get(`/responses/${link}/${encodeURIComponent(id)}`))),
  );
}

function contextOf(input: MediaInput, detail: SingleResponse) {
  return { study_id: input.studyId, link_id: input.linkId, response_id: detail.id };
}

async function writeCurlConfig(
  input: MediaInput,
  details: SingleResponse[],
): Promise<{ config: string; dir: string }> {
  const dir = join(input.out, 'curl');
  await mkdir(dir, { recursive: true });
  const lines: string[] = [];
  let n = 0;
  for (const detail of details) {
    for (const job of mediaJobs(contextOf(input, detail), detail, 'mp4')) {
      lines.push(`url = "${job.url}"`, `output = "${join(dir, `${n++}.bin`)}"`);
    }
  }
  const config = join(input.out, 'curl.config');
  await writeFile(config, `${lines.join('\n')}\n`);
  return { config, dir };
}

export async function mediaDownload(input: MediaInput): Promise<MediaResult> {
  await mkdir(input.out, { recursive: true });
  const details = await fetchDetails(input);
  const curl = await writeCurlConfig(input, details);
  const fetchedAt = Date.now();
  const tmpDir = join(input.out, '.media-tmp');

  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const hashing = new HashingThread();
  const archive = await openMediaArchive(new LocalStorage(input.out), 'media.zip', { hashing });
  const stage = createMediaStage({
    archive,
    hashing,
    tmpDir,
    concurrency: input.concurrency,
    video: 'mp4',
    retries: 5,
    timeoutMs: 30_000,
  });
  // As exportStudy does: one response more than the download limit, so the limit stays busy.
  async function* each() {
    yield* details;
  }
  await forEachBounded(each(), input.concurrency + 1, async (detail) => {
    await stage.archiveResponse(contextOf(input, detail), detail, fetchedAt, async () => detail);
  });
  const zip = await archive.finish().finally(() => hashing.close());
  await rm(tmpDir, { recursive: true, force: true });
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);

  const counters = stage.counters();
  return {
    ms,
    cpu_ms: (cpu.user + cpu.system) / 1000,
    bytes: counters.bytes,
    files: counters.files,
    failed: counters.failed,
    zip_bytes: zip.bytes,
    curlConfig: curl.config,
    curlDir: curl.dir,
  };
}
