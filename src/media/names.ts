/**
 * Entry names inside media.zip: <link_id>/<response_id>/<turn>-<kind>.<ext>, each id by the one
 * encoding of ids to names (src/names.ts): safe for any unzipper on any OS, and two ids never
 * share a folder, not even on a case-insensitive file system.
 */
import { nameOf } from '../names.ts';
import type { MediaKind } from '../records.ts';

/** The folder of one response's media: "<link_id>/<response_id>". */
export function responseFolder(linkId: string, responseId: string): string {
  return `${nameOf(linkId)}/${nameOf(responseId)}`;
}

function checkTurn(turn: number): void {
  if (!Number.isSafeInteger(turn) || turn < 1)
    throw new RangeError(`turn must be a positive integer, got ${turn}`);
}

/** "<link_id>/<response_id>/<turn>-<kind>.<ext>", each part safe. */
export function mediaEntryName(
  linkId: string,
  responseId: string,
  turn: number,
  kind: MediaKind,
  ext: string,
): string {
  checkTurn(turn);
  return `${responseFolder(linkId, responseId)}/${turn}-${kind}.${nameOf(ext)}`;
}

/** The folder holding an HLS playlist and its segments: "<link_id>/<response_id>/<turn>-hls". */
export function hlsFolder(linkId: string, responseId: string, turn: number): string {
  checkTurn(turn);
  return `${responseFolder(linkId, responseId)}/${turn}-hls`;
}

/** The archived playlist's name, relative to its folder. */
export const hlsPlaylistFile = 'index.m3u8';

/** A segment's name relative to the playlist (the playlist references it by this name). */
export function hlsSegmentFile(index: number, ext: string): string {
  return `${String(index + 1).padStart(5, '0')}.${nameOf(ext)}`;
}

const extensions: Record<string, string> = {
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/mp4': 'm4a',
  'audio/x-m4a': 'm4a',
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/wave': 'wav',
  'audio/ogg': 'ogg',
  'audio/webm': 'webm',
  'video/mp4': 'mp4',
  'video/webm': 'webm',
  'application/vnd.apple.mpegurl': 'm3u8',
  'application/x-mpegurl': 'm3u8',
  'audio/mpegurl': 'm3u8',
  'video/mp2t': 'ts',
};

/** File extension for a Content-Type (parameters and case ignored); "bin" when unknown. */
export function extensionFor(contentType: string | null | undefined): string {
  const essence = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  return extensions[essence] ?? 'bin';
}
