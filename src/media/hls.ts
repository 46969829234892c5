/**
 * HLS streams: a playlist (a master playlist followed to its best variant) and every
 * segment it references are downloaded, and the playlist is rewritten to the segments'
 * local names, so the archived copy plays from the zip and holds no signed URL.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { MediaError } from '../errors.ts';
import {
  bestVariant,
  type ParsedPlaylist,
  parsePlaylist,
  rewritePlaylist,
} from '../output/codecs/hls-playlist.ts';
import type { DownloadedFile, DownloadOptions, SignedLink } from './download.ts';
import type { FetchLink } from './fetch.ts';
import type { ResponseLinks } from './links.ts';
import { extensionFor, hlsFolder, hlsPlaylistFile, hlsSegmentFile } from './names.ts';
import type { ArchiveEntry, FetchedJob, MediaBody, MediaJob } from './types.ts';

/** Largest playlist read into memory (playlists are text, a few KiB). */
const maxPlaylistBytes = 4 * 1024 * 1024;

type Refresh = DownloadOptions['refresh'];

/** A playlist's text, wherever its body is. */
async function bodyText(body: MediaBody): Promise<string> {
  return body.kind === 'memory' ? body.data.toString('utf8') : readFile(body.path, 'utf8');
}

async function readPlaylist(fetched: DownloadedFile): Promise<ParsedPlaylist> {
  if (fetched.bytes > maxPlaylistBytes)
    throw new MediaError(`playlist of ${fetched.bytes} bytes is too large`);
  return parsePlaylist(await bodyText(fetched.body));
}

/** Downloads a playlist (following a master playlist to its best variant) and parses it. */
async function loadPlaylist(link: SignedLink, refresh: Refresh, fetchLink: FetchLink) {
  let fetched = await fetchLink(link, refresh);
  let playlist = await readPlaylist(fetched);
  const variant = bestVariant(playlist);
  if (variant) {
    const variantLink = { url: new URL(variant, fetched.link.url).href, issuedAt: fetched.link.issuedAt };
    fetched = await fetchLink(variantLink, async (stale) => {
      const master = await loadPlaylist(await refresh(stale), refresh, fetchLink);
      return master.fetched.link;
    });
    playlist = await readPlaylist(fetched);
    if (bestVariant(playlist)) throw new MediaError('nested master playlists are not supported');
  }
  return { fetched, playlist };
}

/**
 * An HLS stream: its playlist and segments one after another, each segment an entry in
 * the job's folder, then the rewritten playlist (the file the media table points at).
 */
export async function fetchHls(
  job: MediaJob,
  links: ResponseLinks,
  fetchLink: FetchLink,
): Promise<FetchedJob> {
  const refreshPlaylist: Refresh = (stale) => links.fresh(stale, job.turn, 'hls');
  let { fetched, playlist } = await loadPlaylist(links.current(job.turn, 'hls'), refreshPlaylist, fetchLink);
  const folder = hlsFolder(job.link_id, job.response_id, job.turn);
  const entries: ArchiveEntry[] = [];
  const localNames: string[] = [];
  const count = playlist.references.length;
  for (let i = 0; i < count; i++) {
    const uri = playlist.references[i]?.uri ?? '';
    const segmentLink = { url: new URL(uri, fetched.link.url).href, issuedAt: fetched.link.issuedAt };
    // A refused segment link: renew the playlist (and with it every segment's link).
    const segment = await fetchLink(segmentLink, async () => {
      ({ fetched, playlist } = await loadPlaylist(
        await refreshPlaylist(fetched.link),
        refreshPlaylist,
        fetchLink,
      ));
      const renewed = playlist.references[i];
      if (playlist.references.length !== count || !renewed)
        throw new MediaError('the renewed playlist changed');
      return { url: new URL(renewed.uri, fetched.link.url).href, issuedAt: fetched.link.issuedAt };
    });
    const local = hlsSegmentFile(i, extensionFor(segment.contentType));
    localNames.push(local);
    entries.push({ name: `${folder}/${local}`, body: segment.body, bytes: segment.bytes });
  }
  // The rewritten playlist is a few KiB of text: kept in memory, outside the budget.
  const text = Buffer.from(rewritePlaylist(playlist, localNames), 'utf8');
  const file = `${folder}/${hlsPlaylistFile}`;
  entries.push({ name: file, body: { kind: 'memory', data: text }, bytes: text.length });
  const sha256 = createHash('sha256').update(text).digest('hex');
  return { file, contentType: fetched.contentType, bytes: text.length, sha256, entries };
}
