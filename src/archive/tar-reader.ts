/**
 * Reads a tar stream entry by entry (ustar, with pax extended headers for long or non-ASCII
 * paths and large sizes, and GNU long names): what `verify` needs to check a bag serialised
 * as tar without unpacking it. Each entry's bytes are handed on as they are read.
 */
import type { Readable } from 'node:stream';

const BLOCK = 512;

/** Reads exactly the bytes asked for from a stream, in order. */
class ByteReader {
  #buffered: Buffer[] = [];
  #length = 0;
  readonly #iterator: AsyncIterator<Buffer>;

  constructor(stream: Readable) {
    this.#iterator = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  }

  /** Up to `max` bytes (fewer only at the end of the stream); null at its end. */
  async chunk(max: number): Promise<Buffer | null> {
    if (this.#length === 0) {
      const next = await this.#iterator.next();
      if (next.done) return null;
      this.#buffered.push(next.value);
      this.#length += next.value.length;
    }
    const first = this.#buffered[0] as Buffer;
    const taken = first.subarray(0, max);
    if (taken.length === first.length) this.#buffered.shift();
    else this.#buffered[0] = first.subarray(taken.length);
    this.#length -= taken.length;
    return taken;
  }

  async exactly(size: number): Promise<Buffer> {
    const parts: Buffer[] = [];
    let got = 0;
    while (got < size) {
      const part = await this.chunk(size - got);
      if (!part) throw new Error(`the tar ends inside a record (${got} of ${size} bytes)`);
      parts.push(part);
      got += part.length;
    }
    return Buffer.concat(parts);
  }
}

export interface TarEntry {
  path: string;
  size: number;
  /** '0' a file, '5' a folder, and so on. */
  type: string;
}

/**
 * Calls `onEntry` for each entry with its bytes as an async iterable, which it must read to
 * the end before the next entry comes.
 */
export async function readTar(
  stream: Readable,
  onEntry: (entry: TarEntry, bytes: AsyncIterable<Buffer>) => Promise<void>,
): Promise<void> {
  const reader = new ByteReader(stream);
  let pax: Record<string, string> = {};
  let longName: string | null = null;
  for (;;) {
    const header = await reader.exactly(BLOCK);
    if (header.every((byte) => byte === 0)) return;
    checkSum(header);
    const type = String.fromCharCode(header[156] || 0x30);
    let size = octal(header.subarray(124, 136));
    if (pax.size) size = Number(pax.size);
    const padding = (BLOCK - (size % BLOCK)) % BLOCK;
    if (type === 'x' || type === 'L' || type === 'g') {
      const body = await reader.exactly(size + padding);
      const text = body.subarray(0, size).toString('utf8');
      if (type === 'x') pax = parsePax(text);
      if (type === 'L') longName = text.replace(/\0+$/, '');
      continue;
    }
    const path = pax.path ?? longName ?? ustarPath(header);
    pax = {};
    longName = null;
    let left = size;
    async function* bytes(): AsyncIterable<Buffer> {
      while (left > 0) {
        const part = await reader.chunk(Math.min(left, 1 << 20));
        if (!part) throw new Error(`the tar ends inside ${path}`);
        left -= part.length;
        yield part;
      }
    }
    await onEntry({ path, size, type }, bytes());
    while (left > 0) {
      const part = await reader.chunk(left);
      if (!part) throw new Error(`the tar ends inside ${path}`);
      left -= part.length;
    }
    await reader.exactly(padding);
  }
}

function octal(field: Buffer): number {
  const text = field.toString('ascii').replace(/\0.*$/s, '').trim();
  return text === '' ? 0 : Number.parseInt(text, 8);
}

function checkSum(header: Buffer): void {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : (header[i] as number);
  if (sum !== octal(header.subarray(148, 156)))
    throw new Error('a tar header is damaged (its checksum differs)');
}

function ustarPath(header: Buffer): string {
  const name = header.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
  const ustar = header.subarray(257, 262).toString('ascii') === 'ustar';
  const prefix = ustar ? header.subarray(345, 500).toString('utf8').replace(/\0.*$/s, '') : '';
  return prefix ? `${prefix}/${name}` : name;
}

/** "<length> <key>=<value>\n" records. */
function parsePax(text: string): Record<string, string> {
  const records: Record<string, string> = {};
  const bytes = Buffer.from(text, 'utf8');
  let at = 0;
  while (at < bytes.length) {
    const space = bytes.indexOf(0x20, at);
    if (space < 0) break;
    const length = Number(bytes.subarray(at, space).toString('ascii'));
    if (!Number.isFinite(length) || length <= 0) break;
    const record = bytes.subarray(space + 1, at + length - 1).toString('utf8');
    const equals = record.indexOf('=');
    if (equals > 0) records[record.slice(0, equals)] = record.slice(equals + 1);
    at += length;
  }
  return records;
}
