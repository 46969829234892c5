/**
 * Entry names inside media.zip: <link_id>/<response_id>/<turn>-<kind>.<ext>.
 *
 * The ids come from the service and may contain anything, so every segment is made safe
 * for any unzipper on any OS (no "..", no "/" or "\", no control characters, no ":" or
 * other reserved characters, bounded length). A segment that had to change gets a
 * "~<hash of the original>" suffix; "~" never survives sanitising, so a changed id can
 * never produce the same name as an unchanged one, and two changed ids differ by hash.
 */
import { createHash } from 'node:crypto';
import type { MediaKind } from '../records.ts';

/** Longest kept part of a segment, in code points (the hash suffix comes on top). */
const maxSegmentChars = 80;

/** Letters (any script), marks, digits and a few punctuation characters safe everywhere. */
const unsafeCharacter = /[^\p{L}\p{M}\p{N}._-]/gu;

/** Short ASCII segments with nothing to change (ids, extensions): most of them, told apart cheaply. */
const plainAscii = /^[A-Za-z0-9_-](?:[A-Za-z0-9._-]{0,78}[A-Za-z0-9_-])?$/;

/** Names Windows refuses for a file or folder, whatever the extension. */
const windowsReserved = /^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$/i;

function shortHash(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex').slice(0, 16);
}

/** One path segment, safe whatever `value` contains; unchanged when it already was. */
export function safeSegment(value: string): string {
  if (plainAscii.test(value) && !windowsReserved.test(value)) return value;
  let safe = value.normalize('NFC').replace(unsafeCharacter, '_');
  // Leading dots would make "..", "." or hidden files; trailing dots vanish on Windows.
  safe = safe.replace(/^\.+/, (dots) => '_'.repeat(dots.length)).replace(/\.+$/, '');
  const codePoints = Array.from(safe).slice(0, maxSegmentChars);
  // At most 200 UTF-8 bytes, so with the suffix a segment stays under the 255-byte limit of
  // file names when the zip is unpacked (80 CJK characters alone are 240 bytes).
  while (Buffer.byteLength(codePoints.join('')) > 200) codePoints.pop();
  safe = codePoints.join('');
  if (safe === value && safe !== '' && !windowsReserved.test(safe)) return safe;
  return `${safe || '_'}~${shortHash(value)}`;
}

/** The folder of one response's media: "<link_id>/<response_id>". */
export function responseFolder(linkId: string, responseId: string): string {
  return `${safeSegment(linkId)}/${safeSegment(responseId)}`;
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
  return `${responseFolder(linkId, responseId)}/${turn}-${kind}.${safeSegment(ext)}`;
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
  return `${String(index + 1).padStart(5, '0')}.${safeSegment(ext)}`;
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
