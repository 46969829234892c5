/**
 * Structure checks for the sandbox's media: each file must stay well-formed media (what a
 * player needs to skip the tag) and carry the tag naming the path it was served at.
 */
import { mediaTag } from '../../src/sandbox/media.ts';

/** The path part of a media URL: what the sandbox writes into the file. */
export function tagOf(url: string): string {
  return mediaTag(new URL(url).pathname);
}

/** An ID3v2.3 tag whose TXXX frame holds `tag`, then exactly `frames` (the MP3 frames). */
export function mp3Problems(bytes: Buffer, tag: string, frames: Buffer): string[] {
  const problems: string[] = [];
  if (bytes.subarray(0, 3).toString('latin1') !== 'ID3' || bytes[3] !== 3) problems.push('no ID3v2.3 header');
  let size = 0;
  for (let i = 6; i < 10; i++) size = (size << 7) | (bytes[i]! & 0x7f);
  const tagBytes = bytes.subarray(10, 10 + size);
  if (tagBytes.subarray(0, 4).toString('latin1') !== 'TXXX') problems.push('no TXXX frame');
  if (!tagBytes.toString('latin1').endsWith(`study-export\0${tag}`))
    problems.push('TXXX does not hold the tag');
  if (!bytes.subarray(10 + size).equals(frames)) problems.push('the MP3 frames after the tag differ');
  if (bytes[10 + size] !== 0xff) problems.push('no MPEG frame sync after the tag');
  return problems;
}

/** Top-level boxes that cover the file exactly, starting with `start`, one `free` box holding `tag`. */
export function mp4Problems(bytes: Buffer, tag: string, start: Buffer): string[] {
  const problems: string[] = [];
  if (!bytes.subarray(0, start.length).equals(start)) problems.push('does not start with the fixture');
  const boxes: string[] = [];
  let at = 0;
  while (at + 8 <= bytes.length) {
    const size = bytes.readUInt32BE(at);
    const type = bytes.subarray(at + 4, at + 8).toString('latin1');
    if (size < 8) break;
    if (type === 'free' && bytes.subarray(at + 8, at + size).toString('latin1') === tag) boxes.push('tag');
    else boxes.push(type);
    at += size;
  }
  if (at !== bytes.length) problems.push(`boxes end at ${at}, the file at ${bytes.length}`);
  if (boxes[0] !== 'ftyp') problems.push(`first box ${boxes[0]}`);
  if (boxes.filter((b) => b === 'tag').length !== 1)
    problems.push(`no free box holding the tag (${boxes.join(',')})`);
  return problems;
}

/** Whole 188-byte packets with their sync byte, starting with `start`, the tag in null packets. */
export function tsProblems(bytes: Buffer, tag: string, start: Buffer): string[] {
  const problems: string[] = [];
  if (!bytes.subarray(0, start.length).equals(start)) problems.push('does not start with the fixture');
  if (bytes.length % 188 !== 0) problems.push('not whole packets');
  let nullPayload = '';
  for (let at = 0; at < bytes.length; at += 188) {
    if (bytes[at] !== 0x47) problems.push(`no sync byte at ${at}`);
    const pid = ((bytes[at + 1]! & 0x1f) << 8) | bytes[at + 2]!;
    if (at >= start.length && pid !== 0x1fff) problems.push(`packet at ${at} is not a null packet`);
    if (pid === 0x1fff) nullPayload += bytes.subarray(at + 4, at + 188).toString('latin1');
  }
  if (!nullPayload.includes(tag)) problems.push('no null packet holds the tag');
  return problems;
}
