/**
 * Each recording as a file of its own in the bag, in its original format, streamed out of the
 * media.zip of the run that archived it (src/reader finds which). An HLS recording is gathered
 * into one file: its archived playlist's initialisation section (EXT-X-MAP), if any, then its
 * segments in order, byte for byte; MPEG-TS segments so joined are one MPEG-TS stream, and
 * fragmented MP4 after its init section one MP4. Browsers play no MPEG-TS, so a `.ts` file whose
 * turn has no MP4 recording in the bag gets, beside it, a copy they play (browser-copy.ts), made
 * as its bytes pass.
 */

import { nameOf } from '../names.ts';
import { parsePlaylist } from '../output/codecs/hls-playlist.ts';
import type { Found, Recording, ZipEntry } from '../reader/index.ts';
import { BrowserCopy } from './browser-copy.ts';
import type { Payload } from './payload.ts';

export const RECORDINGS_DIR = 'recordings';

/** A recording the bag holds, or one it lists as missing. */
export interface PlannedRecording {
  recording: Recording;
  /** Under data/; null when missing. */
  path: string | null;
  /** Its size in the bag; null when missing. */
  bytes: number | null;
  /** A copy browsers play of an MPEG-TS original, under data/; null when there is none. */
  copyPath: string | null;
  /** Why it is missing, or notes on the copy included. */
  note: string | null;
}

/**
 * Adds `recording` to the bag (or notes why it is missing). `copyTo`, a scratch file, asks for
 * a copy browsers play when the recording is MPEG-TS.
 */
export async function addRecording(
  payload: Payload,
  recording: Recording,
  copyTo: string | null,
): Promise<PlannedRecording> {
  const { located } = recording;
  if ('reason' in located)
    return { recording, path: null, bytes: null, copyPath: null, note: located.reason };
  const folder = `${RECORDINGS_DIR}/${nameOf(recording.response_id)}`;
  const entries = recording.kind === 'hls' ? await hlsEntries(located) : [located.entry];
  const last = entries.at(-1)?.name ?? '';
  const extension =
    recording.kind === 'hls' && entries.length > 1 && isMp4(entries) ? 'mp4' : extensionOf(last);
  const base = `${folder}/${recording.turn}-${nameOf(recording.kind)}`;
  const wantsCopy = copyTo !== null && recording.kind === 'hls' && extension === 'ts';
  let copy = null as BrowserCopy | null;
  const { bytes } = await payload.add({
    path: `data/${base}.${extension}`,
    size: entries.reduce((sum, entry) => sum + entry.size, 0),
    open: async () => {
      copy = wantsCopy && copyTo ? new BrowserCopy(copyTo) : null;
      return joined(located, entries, copy);
    },
  });
  const planned = { recording, path: `${base}.${extension}`, bytes, copyPath: null, note: recording.note };
  return copy ? addCopy(payload, planned, copy, `${base}.mp4`) : planned;
}

async function addCopy(
  payload: Payload,
  planned: PlannedRecording,
  copy: BrowserCopy,
  path: string,
): Promise<PlannedRecording> {
  const made = await copy.finish();
  if ('reason' in made) {
    const note = `no copy browsers play, as ${made.reason}; VLC, mpv and ffplay play the .ts file`;
    return { ...planned, note: [planned.note, note].filter(Boolean).join('; ') };
  }
  try {
    await payload.add({ path: `data/${path}`, ...made.file });
  } finally {
    await made.remove();
  }
  return { ...planned, copyPath: path };
}

/** The playlist's init section and segments, in order (an encryption key is not media). */
async function hlsEntries(found: Found): Promise<ZipEntry[]> {
  const playlist = parsePlaylist((await found.zip.readAll(found.entry)).toString('utf8'));
  const folder = found.entry.name.slice(0, found.entry.name.lastIndexOf('/') + 1);
  return playlist.references
    .filter((reference) => !/^#EXT-X-KEY/.test(playlist.lines[reference.line]?.trim() ?? ''))
    .map((reference) => {
      const entry = found.zip.entries.get(`${folder}${reference.uri}`);
      if (!entry) throw new Error(`${found.entry.name} lists ${reference.uri}, which media.zip lacks`);
      return entry;
    });
}

const isMp4 = (entries: readonly ZipEntry[]) => /\.(mp4|m4s|m4v|cmfv)$/i.test(entries.at(-1)?.name ?? '');

function extensionOf(name: string): string {
  const extension = name.slice(name.lastIndexOf('.') + 1).toLowerCase();
  return /^[a-z0-9]{1,8}$/.test(extension) ? extension : 'bin';
}

/** The entries' bytes one after another; a browser copy, if any, sees them segment by segment. */
async function* joined(
  found: Found,
  entries: readonly ZipEntry[],
  copy: BrowserCopy | null,
): AsyncIterable<Uint8Array> {
  for (const entry of entries) {
    for await (const chunk of await found.zip.open(entry)) {
      copy?.push(chunk as Uint8Array);
      yield chunk as Uint8Array;
    }
    await copy?.endSegment();
  }
}
