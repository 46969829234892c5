/**
 * Where a bag's files go: a folder, one zip or one tar (folder-sink.ts, zip-sink.ts,
 * tar-sink.ts), in the storage the user chose. Every file's size is known before its bytes
 * (a recording's from its zip entry, a generated file's once it is written to scratch), so a
 * zip or tar header precedes the bytes and nothing is held whole. Each byte is read once:
 * as it passes it is counted and hashed with SHA-256 and SHA-512 (and CRC-32 by the zip writer).
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { RunError } from '../errors.ts';
import type { RunningSha256 } from '../storage/types.ts';

/** One file of the bag: its path inside the bag ('data/...', 'bagit.txt'), size and bytes. */
export interface BagFile {
  path: string;
  size: number;
  open(): Promise<Readable | AsyncIterable<Uint8Array> | Iterable<Uint8Array>>;
}

export interface Digests {
  bytes: number;
  sha256: string;
  sha512: string;
}

export interface BagSink {
  /** Where the bag is, for messages: a folder, or the zip or tar file. */
  readonly location: string;
  /** Writes one file; resolves with its digests, counted as its bytes passed. */
  add(file: BagFile): Promise<Digests>;
  /** Ends the bag (a zip's directory, a tar's end blocks, a folder's rename into place). */
  finish(): Promise<void>;
  /** Stops and removes what was written. */
  abort(): Promise<void>;
}

/**
 * `file`'s bytes as they pass, each chunk hashed once per algorithm; the digests once they
 * have all passed. A source that ends short of or beyond its stated size is an error naming
 * the file (`failure`): a header already promised that size.
 */
export function hashedSource(file: BagFile): {
  chunks(): AsyncGenerator<Uint8Array>;
  digests(): Digests;
  failure(): RunError | null;
} {
  const sha256 = createHash('sha256');
  const sha512 = createHash('sha512');
  let bytes = 0;
  let failure: RunError | null = null;
  let digests: Digests | null = null;
  const wrongSize = () =>
    new RunError(
      `${file.path}: its source gave ${bytes > file.size ? 'more than' : bytes} of the ${file.size} bytes expected; the output changed while it was archived?`,
    );
  async function* chunks(): AsyncGenerator<Uint8Array> {
    for await (const chunk of await file.open()) {
      const data = chunk as Uint8Array;
      bytes += data.length;
      if (bytes > file.size) break;
      sha256.update(data);
      sha512.update(data);
      yield data;
    }
    if (bytes !== file.size) {
      failure = wrongSize();
      throw failure;
    }
    digests = { bytes, sha256: sha256.digest('hex'), sha512: sha512.digest('hex') };
  }
  return {
    chunks,
    digests: () => {
      if (!digests) throw failure ?? wrongSize();
      return digests;
    },
    failure: () => failure,
  };
}

/** Copies `file`'s bytes to `write`, hashing each chunk once on the way (hashedSource). */
export async function copyHashed(
  file: BagFile,
  write: (chunk: Uint8Array) => Promise<void>,
): Promise<Digests> {
  const source = hashedSource(file);
  for await (const chunk of source.chunks()) await write(chunk);
  return source.digests();
}

/** The storage's own SHA-256 of a written file is not needed: the sink hashes every byte once. */
export const noHash: RunningSha256 = { update: () => {}, digest: () => '' };
