/**
 * The payload as it is written: each file added to the sink as soon as it is ready (a
 * recording streamed, a table from the scratch file it was written to, a page from memory),
 * its digests kept for the manifests. Files come from memory or the local scratch folder.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { BagFile, BagSink, Digests } from './sink.ts';

export interface Written {
  /** Path inside the bag ('data/…'). */
  path: string;
  digests: Digests;
}

/** Forbidden in a bag's names: the manifests would need percent-encoding (RFC 8493 2.1.3). */
const unportable = /[%\r\n\\]/;

export class Payload {
  readonly written: Written[] = [];
  readonly #byPath = new Map<string, Digests>();
  readonly #lowerCase = new Set<string>();

  constructor(private readonly sink: BagSink) {}

  /** Adds `file`; a name that is not portable, or a case-only twin of another, is a bug, not data. */
  async add(file: BagFile): Promise<Digests> {
    const lower = file.path.toLowerCase();
    if (unportable.test(file.path) || this.#lowerCase.has(lower) || !file.path.startsWith('data/'))
      throw new Error(`${file.path}: not a portable, distinct payload path`);
    this.#lowerCase.add(lower);
    const digests = await this.sink.add(file);
    this.written.push({ path: file.path, digests });
    this.#byPath.set(file.path, digests);
    return digests;
  }

  /** The digests of a file added, by its path under data/. */
  digestsOf(dataPath: string): Digests | undefined {
    return this.#byPath.get(`data/${dataPath}`);
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
