/**
 * The payload as it is written: each file added to the sink as soon as it is ready (a
 * recording streamed, a table from the scratch file it was written to, a page from memory).
 * Its manifests' lines go to scratch files as each file is added, so a bag of any number of
 * files holds none of them in memory: only the counts (Payload-Oxum's), a 48-bit hash of each
 * path (to refuse a case-only twin), and the digests of the few files datapackage.json describes.
 */

import { hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { appendFile, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { BagFile, BagSink, Digests } from './sink.ts';
import { ALGORITHMS, type Algorithm, manifestLine, parseManifest } from './tags.ts';

/** Forbidden in a bag's names: the manifests would need percent-encoding (RFC 8493 2.1.3). */
const unportable = /[%\r\n\\]/;

/** Manifest lines gathered before they are written to their scratch file. */
const manifestBatchBytes = 1 << 16;

export class Payload {
  /** Files added, and their bytes. */
  files = 0;
  bytes = 0;
  readonly #described = new Map<string, Digests>();
  readonly #pathHashes = new Set<number>();
  readonly #manifests: Record<Algorithm, ManifestSpill>;

  constructor(
    private readonly sink: BagSink,
    /** A local folder of the bag's own: the manifests are gathered there. */
    scratch: string,
  ) {
    this.#manifests = {
      sha256: new ManifestSpill(join(scratch, 'manifest-sha256.txt'), 'sha256'),
      sha512: new ManifestSpill(join(scratch, 'manifest-sha512.txt'), 'sha512'),
    };
  }

  /**
   * Adds `file`; a name that is not portable, or a case-only twin of another, is a bug, not data.
   * `described`: its digests are kept for `digestsOf` (a file datapackage.json describes).
   */
  async add(file: BagFile, options: { described?: boolean } = {}): Promise<Digests> {
    const lower = file.path.toLowerCase();
    const pathHash = hash('sha1', lower, 'buffer').readUIntBE(0, 6);
    if (
      unportable.test(file.path) ||
      !file.path.startsWith('data/') ||
      (this.#pathHashes.has(pathHash) && (await this.#holds(lower)))
    )
      throw new Error(`${file.path}: not a portable, distinct payload path`);
    this.#pathHashes.add(pathHash);
    const digests = await this.sink.add(file);
    this.files += 1;
    this.bytes += digests.bytes;
    for (const algorithm of ALGORITHMS) await this.#manifests[algorithm].add(file.path, digests);
    if (options.described) this.#described.set(file.path, digests);
    return digests;
  }

  /** The digests of a file added as described, by its path under data/. */
  digestsOf(dataPath: string): Digests | undefined {
    return this.#described.get(`data/${dataPath}`);
  }

  /** Each manifest, whole: its local file (in the order the files were added). */
  async manifests(): Promise<Record<Algorithm, string>> {
    for (const algorithm of ALGORITHMS) await this.#manifests[algorithm].flush();
    return { sha256: this.#manifests.sha256.path, sha512: this.#manifests.sha512.path };
  }

  /** Whether a file added has this lower-cased path: read back only when its hash was seen. */
  async #holds(lower: string): Promise<boolean> {
    const { entries } = parseManifest(await this.#manifests.sha256.text(), 'manifest-sha256.txt');
    return [...entries.keys()].some((path) => path.toLowerCase() === lower);
  }
}

/** A manifest's lines, "<hex digest>  <path>", appended to a scratch file in batches. */
class ManifestSpill {
  #pending = '';
  #written = false;

  constructor(
    readonly path: string,
    private readonly algorithm: Algorithm,
  ) {}

  async add(path: string, digests: Digests): Promise<void> {
    this.#pending += manifestLine(path, digests, this.algorithm);
    if (this.#pending.length >= manifestBatchBytes) await this.flush();
  }

  /** Every line so far. */
  async text(): Promise<string> {
    await this.flush();
    return readFile(this.path, 'utf8');
  }

  /** Writes the lines gathered; the file exists afterwards, even empty. */
  async flush(): Promise<void> {
    if (this.#pending === '' && this.#written) return;
    const lines = this.#pending;
    this.#pending = '';
    this.#written = true;
    await appendFile(this.path, lines, 'utf8');
  }
}

export function memoryFile(path: string, content: string | Buffer): BagFile {
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  return { path, size: bytes.length, open: async () => [bytes] };
}

export async function diskFile(path: string, local: string): Promise<BagFile> {
  const { size } = await stat(local);
  return { path, size, open: async () => createReadStream(local, { highWaterMark: 1 << 20 }) };
}
