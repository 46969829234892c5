/**
 * Each recording as a file of its own in the bag, in its original format, streamed out of the
 * media.zip of the run that archived it (src/reader finds which). An HLS recording is gathered
 * into one file: its archived playlist's initialisation section (EXT-X-MAP), if any, then its
 * segments in order, byte for byte; MPEG-TS segments so joined are one MPEG-TS stream, and
 * fragmented MP4 after its init section one MP4, files VLC, mpv, ffplay and browsers open.
 */
import { parsePlaylist } from '../media/hls.ts';
import { nameOf } from '../names.ts';
import type { Found, Recording, ZipEntry } from '../reader/index.ts';
import type { BagFile } from './sink.ts';

export const RECORDINGS_DIR = 'recordings';

/** A recording the bag holds, or one it lists as missing. */
export interface PlannedRecording {
  recording: Recording;
  /** Under data/; null when missing. */
  path: string | null;
  file: BagFile | null;
  /** Why it is missing, or the reader's note on the copy included. */
  note: string | null;
}

export async function planRecording(recording: Recording): Promise<PlannedRecording> {
  const { located } = recording;
  if ('reason' in located) return { recording, path: null, file: null, note: located.reason };
  const folder = `${RECORDINGS_DIR}/${nameOf(recording.response_id)}`;
  const entries = recording.kind === 'hls' ? await hlsEntries(located) : [located.entry];
  const last = entries.at(-1)?.name ?? '';
  const extension =
    recording.kind === 'hls' && entries.length > 1 && isMp4(entries) ? 'mp4' : extensionOf(last);
  const path = `${folder}/${recording.turn}-${nameOf(recording.kind)}.${extension}`;
  const size = entries.reduce((sum, entry) => sum + entry.size, 0);
  const file: BagFile = {
    path: `data/${path}`,
    size,
    open: async () => joined(located, entries),
  };
  return { recording, path, file, note: recording.note };
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

async function* joined(found: Found, entries: readonly ZipEntry[]): AsyncIterable<Uint8Array> {
  for (const entry of entries) yield* await found.zip.open(entry);
}
