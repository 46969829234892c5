/**
 * What `verify` looks for in a package made with a privacy profile: any match of the built-in
 * detectors left in any text it holds (its files in every registered output format, each
 * format saying how its texts are read; pages, sources, metadata, zips and gzip), named by file
 * and kind, never by value. The tool's own addresses are not personal data: the XML namespaces
 * and schemas its formats declare, and the service the package says it came from. Pure: the
 * bytes are decoded here, not read.
 */
import { gunzipSync } from 'node:zlib';
import { privacyDetectors } from '../config/schema.ts';
import { bufferedZipEntries } from '../output/codecs/zip-reader.ts';
import { formatOfFile } from '../output/formats/index.ts';
import { findMatches, type TagKind } from './detect.ts';

export interface Leftover {
  /** The file, and inside it the entry (`x.xlsx!xl/sharedStrings.xml`). */
  file: string;
  kind: TagKind;
  count: number;
}

/** Hosts of the namespaces and schemas that XML, HTML and workbook formats declare. */
const formatHosts = new Set([
  'www.w3.org',
  'schemas.openxmlformats.org',
  'schemas.microsoft.com',
  'purl.org',
]);

/** Files that are text and no output format's: guides, pages, metadata, QDA sources. */
const textFile = /\.(tsv|txt|md|html?|json|xml|qde|rels|m3u8)$/i;
/** Containers whose entries are scanned as files of their own. */
const container = /\.(zip|qdpx)$/i;

/** Whether the scan reads texts out of a file named `path`. */
export function scannable(path: string): boolean {
  return (
    formatOfFile(path) !== undefined || textFile.test(path) || container.test(path) || /\.gz$/i.test(path)
  );
}

export class PackageScan {
  readonly #found: { file: string; kind: TagKind; host: string | null }[] = [];

  /** Every text `bytes` (named `file`) holds: itself, a workbook's or zip's entries, Parquet values. */
  async add(file: string, bytes: Buffer): Promise<void> {
    if (bytes.length > 2 && bytes[0] === 0x1f && bytes[1] === 0x8b)
      return this.add(file.replace(/\.gz$/, ''), gunzipSync(bytes));
    const format = formatOfFile(file);
    if (format !== undefined) {
      for (const { part, text } of await format.texts(bytes))
        this.text(part === undefined ? file : `${file}!${part}`, text);
      return;
    }
    if (container.test(file)) {
      for (const entry of await bufferedZipEntries(bytes, scannable))
        await this.add(`${file}!${entry.name}`, entry.data);
      return;
    }
    if (textFile.test(file)) this.text(file, bytes.toString('utf8'));
  }

  text(file: string, text: string): void {
    // Namespace declarations are the formats', never a respondent's.
    const plain = text.replace(/\sxmlns(?::[\w.-]+)?="[^"]*"/g, '');
    for (const match of findMatches(plain, { detect: privacyDetectors, terms: null, patterns: [] })) {
      const value = plain.slice(match.start, match.end);
      this.#found.push({ file, kind: match.kind, host: hostOf(match.kind, value) });
    }
  }

  /** What remains, by file and kind, apart from the formats' hosts and `serviceHosts`. */
  leftovers(serviceHosts: ReadonlySet<string> = new Set()): Leftover[] {
    const counts = new Map<string, Leftover>();
    for (const found of this.#found) {
      if (found.host !== null && (formatHosts.has(found.host) || serviceHosts.has(found.host))) continue;
      const key = `${found.file}\u0000${found.kind}`;
      const entry = counts.get(key) ?? { file: found.file, kind: found.kind, count: 0 };
      entry.count += 1;
      counts.set(key, entry);
    }
    return [...counts.values()];
  }
}

/** The host of a URL or an IP address match (lower case), else null. */
export function hostOf(kind: TagKind, value: string): string | null {
  if (kind === 'IP') return value.toLowerCase();
  if (kind !== 'URL') return null;
  try {
    return new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`).hostname
      .replace(/^\[|\]$/g, '')
      .toLowerCase();
  } catch {
    return null;
  }
}
