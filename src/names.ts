/**
 * Names on disk, in media.zip and in object keys, made from ids the service sends: the one
 * encoding every output path uses (state files, current/ partitions, wide sheets, workbooks,
 * zip entries).
 *
 * Every UTF-8 byte outside [a-z0-9_.-] is escaped as a mark and two upper-case hex digits, and so
 * are a leading or trailing "." and the first letter of a Windows device name (con, nul, com1…).
 * The mark is "%" in current/'s partition folders (`partitionValueOf`): the Hive/Spark
 * convention, which hive-partitioned readers (DuckDB, pyarrow, Spark) decode back to the exact
 * id. Elsewhere (`nameOf`) it is "~": a path with two "%" reads as a Windows variable ("%X%") to
 * some tools, the Frictionless data package library among them, which then refuses it. So:
 * - plain lower-case ids (uuids) are their own names;
 * - two ids never share a name: the escaping can be read back (`idOf`);
 * - ids that differ only by case never share a name on a case-insensitive file system (macOS,
 *   Windows): upper-case letters are escaped ("~41".."~5A"), and no two names differ only by case;
 * - every name is safe as a file name on every OS and as a zip entry: no "/" or "\", no ".",
 *   "..", hidden or Windows-reserved names, nothing Windows would cut (a trailing dot).
 * A name is at most MAX_NAME_BYTES bytes. A longer one keeps its first part and ends in "~~" (in
 * a partition, "~") and 16 hex digits of the id's SHA-256. After an escape's mark come two hex
 * digits, and "~" in a partition value is escaped, so such a name is never another id's; two
 * long ids share one only if those 64 bits of their hashes do. A hive reader gives back such a
 * partition's name as it is, not the id.
 */
import { createHash } from 'node:crypto';

/** Bytes of a name at most: a workbook's name and its extension stay well under 255. */
export const MAX_NAME_BYTES = 120;

const HASH_HEX = 16;
/** Two names in one ("<link_id name>~_<study id name>"): in a name "~" is followed by a hex digit or "~". */
const PAIR_MARK = '~_';

type Mark = '~' | '%';

/** Names as they are: lower-case letters, digits, "_" and "-", and inner dots. */
const plain = /^[a-z0-9_-](?:[a-z0-9_.-]*[a-z0-9_-])?$/;
const kept = /^[a-z0-9_.-]$/;
/** Names Windows refuses for a file or folder, whatever follows a dot. */
const windowsDevice = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\.|$)/;

/** The name of `id` in file names, zip entries and object keys (see the top of this file). */
export function nameOf(id: string): string {
  return encode(id, '~');
}

/** The value of `id` in a partition folder's name (study_id=<value>), as Hive readers decode it. */
export function partitionValueOf(id: string): string {
  return encode(id, '%');
}

function encode(id: string, mark: Mark): string {
  if (id.length <= MAX_NAME_BYTES && plain.test(id) && !windowsDevice.test(id)) return id;
  // An empty id is the mark alone, which no other id's name is (the mark starts an escape).
  if (id === '') return mark;
  const escapes = encodeBytes(id, mark);
  if (windowsDevice.test(escapes.join(''))) escapes[0] = escapeOf(id.charCodeAt(0), mark);
  const last = escapes.length - 1;
  if (escapes[0] === '.') escapes[0] = escapeOf(0x2e, mark);
  if (escapes[last] === '.') escapes[last] = escapeOf(0x2e, mark);
  const name = escapes.join('');
  if (name.length <= MAX_NAME_BYTES) return name;
  // Cut between characters, so the kept part still decodes.
  const hashMark = mark === '~' ? '~~' : '~';
  let cut = '';
  for (const piece of escapes) {
    if (cut.length + piece.length > MAX_NAME_BYTES - hashMark.length - HASH_HEX) break;
    cut += piece;
  }
  return `${cut}${hashMark}${hashOf(id)}`;
}

/**
 * The name of a study's files in a run (wide/<name>.csv, xlsx/<name>.xlsx): its link_id's
 * name, or, for a link_id that two studies of the run share, "<link_id name>~_<study id name>".
 */
export function studyFileName(study: { study_id: string; link_id: string }, shared: boolean): string {
  const name = nameOf(study.link_id);
  return shared ? `${name}${PAIR_MARK}${nameOf(study.study_id)}` : name;
}

/** Each study's file name in a run, by study id: the run and `verify` derive them alike. */
export function studyFileNames(
  studies: readonly { study_id: string; link_id: string }[],
): Map<string, string> {
  const count = new Map<string, number>();
  for (const study of studies) count.set(study.link_id, (count.get(study.link_id) ?? 0) + 1);
  return new Map(
    studies.map((study) => [study.study_id, studyFileName(study, (count.get(study.link_id) ?? 0) > 1)]),
  );
}

/** The id a name encodes, for names that are not hashed (the inverse of nameOf, or of partitionValueOf with "%"). */
export function idOf(name: string, mark: Mark = '~'): string {
  if (name === mark) return '';
  const bytes: number[] = [];
  for (let i = 0; i < name.length; i++) {
    if (name[i] === mark) {
      bytes.push(Number.parseInt(name.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(name.charCodeAt(i));
  }
  return fromWtf8(bytes);
}

/** Each character's UTF-8 bytes, each as itself or "%XX": one piece per character, so a cut never splits one. */
function encodeBytes(id: string, mark: Mark): string[] {
  const pieces: string[] = [];
  for (const char of id) {
    let piece = '';
    for (const byte of wtf8(char)) {
      const one = String.fromCharCode(byte);
      piece += kept.test(one) ? one : escapeOf(byte, mark);
    }
    pieces.push(piece);
  }
  return pieces;
}

function escapeOf(byte: number, mark: Mark): string {
  return `${mark}${byte.toString(16).toUpperCase().padStart(2, '0')}`;
}

function hashOf(id: string): string {
  return createHash('sha256')
    .update(Buffer.from(wtf8(id)))
    .digest('hex')
    .slice(0, HASH_HEX);
}

/**
 * UTF-8, except that a lone surrogate (JSON can carry one) is encoded as its own three bytes
 * instead of U+FFFD, which would give it the name of another id.
 */
function wtf8(id: string): number[] {
  const bytes: number[] = [];
  for (let i = 0; i < id.length; i++) {
    let code = id.charCodeAt(i);
    const next = id.charCodeAt(i + 1);
    if (code >= 0xd800 && code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      code = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00);
      i++;
    }
    if (code < 0x80) bytes.push(code);
    else if (code < 0x800) bytes.push(0xc0 | (code >> 6), 0x80 | (code & 63));
    else if (code < 0x10000) bytes.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 63), 0x80 | (code & 63));
    else
      bytes.push(
        0xf0 | (code >> 18),
        0x80 | ((code >> 12) & 63),
        0x80 | ((code >> 6) & 63),
        0x80 | (code & 63),
      );
  }
  return bytes;
}

function fromWtf8(bytes: readonly number[]): string {
  let out = '';
  for (let i = 0; i < bytes.length; ) {
    const byte = bytes[i] as number;
    const more = byte < 0x80 ? 0 : byte < 0xe0 ? 1 : byte < 0xf0 ? 2 : 3;
    let code = more === 0 ? byte : byte & (0x3f >> more);
    for (let k = 1; k <= more; k++) code = (code << 6) | ((bytes[i + k] as number) & 63);
    out += String.fromCodePoint(code);
    i += more + 1;
  }
  return out;
}
