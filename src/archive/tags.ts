/**
 * The tag files of a BagIt 1.0 bag (RFC 8493): bagit.txt, bag-info.txt, a payload manifest per
 * algorithm (sha256, sha512) and a tag manifest per algorithm over the other tag files. A
 * manifest line is "<hex digest>  <path>", the form `sha256sum -c` reads as well; paths never
 * hold "%", CR or LF (names.ts), so none needs the RFC's percent-encoding.
 */
import type { Digests } from './sink.ts';

export const ALGORITHMS = ['sha256', 'sha512'] as const;
export type Algorithm = (typeof ALGORITHMS)[number];

export const BAGIT_TXT = 'bagit.txt';
export const BAG_INFO_TXT = 'bag-info.txt';
export const manifestName = (algorithm: Algorithm) => `manifest-${algorithm}.txt`;
export const tagManifestName = (algorithm: Algorithm) => `tagmanifest-${algorithm}.txt`;

export function bagitTxt(): string {
  return 'BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n';
}

/** bag-info.txt's labels in order; a value's line breaks become spaces (a label is one line). */
export function bagInfoTxt(fields: readonly (readonly [string, string])[]): string {
  return fields.map(([label, value]) => `${label}: ${value.replace(/[\r\n]+/g, ' ').trim()}\n`).join('');
}

/** "<bytes>.<files>", the payload's size and file count. */
export function payloadOxum(bytes: number, files: number): string {
  return `${bytes}.${files}`;
}

/** A size as people read it, in decimal units as the BagIt examples give it ("260 GB"). */
export function bagSize(bytes: number): string {
  const units = ['bytes', 'KB', 'MB', 'GB', 'TB', 'PB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return unit === 0 ? `${bytes} bytes` : `${value.toFixed(value < 10 ? 2 : 1)} ${units[unit]}`;
}

export function manifestTxt(
  files: readonly { path: string; digests: Digests }[],
  algorithm: Algorithm,
): string {
  return files.map((file) => manifestLine(file.path, file.digests, algorithm)).join('');
}

/** One line of a BagIt manifest: "<hex digest>  <path>". */
export function manifestLine(path: string, digests: Digests, algorithm: Algorithm): string {
  return `${digests[algorithm]}  ${path}\n`;
}

/** A manifest's lines back as path -> digest; a line that is not "<hex> <path>" is named. */
export function parseManifest(
  text: string,
  name: string,
): { entries: Map<string, string>; problems: string[] } {
  const entries = new Map<string, string>();
  const problems: string[] = [];
  text.split('\n').forEach((line, i) => {
    const trimmed = line.replace(/\r$/, '');
    if (trimmed === '') return;
    const match = /^([0-9a-fA-F]+)[ \t]+\*?(.+)$/.exec(trimmed);
    if (!match) problems.push(`${name} line ${i + 1}: not "<digest> <path>"`);
    else entries.set(decodePath(match[2] as string), (match[1] as string).toLowerCase());
  });
  return { entries, problems };
}

/** RFC 8493 2.1.3: %0A, %0D and %25 in a manifest's path stand for LF, CR and %. */
function decodePath(path: string): string {
  return path.replace(/%0A/gi, '\n').replace(/%0D/gi, '\r').replace(/%25/g, '%');
}
