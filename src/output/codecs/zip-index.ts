/**
 * Where each entry's bytes lie inside a run's media.zip, so a recording is read straight out
 * of the zip by byte range, from a folder or a bucket alike (the viewer serves ranges, the
 * archive copies whole entries): the end records and the central directory are read in two
 * or three ranged reads, and an entry's data starts after its local header (read once, on
 * first use). Only stored (uncompressed) entries can be read that way; media.zip holds
 * nothing else.
 */
import type { Readable } from 'node:stream';
import type { Storage } from '../../storage/types.ts';

export interface ZipEntry {
  name: string;
  /** 0: stored. */
  method: number;
  size: number;
  compressedSize: number;
  localHeaderOffset: number;
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

async function readRange(storage: Storage, path: string, start: number, end: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await storage.readStream(path, { start, end })) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export class ZipIndex {
  readonly #dataOffsets = new Map<string, Promise<number>>();

  private constructor(
    private readonly storage: Storage,
    private readonly path: string,
    readonly entries: ReadonlyMap<string, ZipEntry>,
  ) {}

  /** Reads the central directory of the zip `path` of `bytes` bytes. */
  static async open(storage: Storage, path: string, bytes: number): Promise<ZipIndex> {
    const entries = new Map<string, ZipEntry>();
    for (const { entry } of (await readCentralDirectory(storage, path, bytes)).records)
      entries.set(entry.name, entry);
    return new ZipIndex(storage, path, entries);
  }

  /**
   * The same zip with every entry under another name (a handoff's pseudonyms in its paths); the
   * bytes are read from the same places.
   */
  renamed(rename: (name: string) => string): ZipIndex {
    const entries = new Map<string, ZipEntry>();
    for (const entry of this.entries.values()) {
      const name = rename(entry.name);
      entries.set(name, { ...entry, name });
    }
    return new ZipIndex(this.storage, this.path, entries);
  }

  /** Where the entry's bytes start in the zip. */
  dataOffset(entry: ZipEntry): Promise<number> {
    let offset = this.#dataOffsets.get(entry.name);
    if (!offset) {
      offset = readRange(this.storage, this.path, entry.localHeaderOffset, entry.localHeaderOffset + 30).then(
        (header) => {
          if (header.readUInt32LE(0) !== LOCAL)
            throw new Error(`${this.path}: ${entry.name}: no local header`);
          return entry.localHeaderOffset + 30 + header.readUInt16LE(26) + header.readUInt16LE(28);
        },
      );
      offset.catch(() => this.#dataOffsets.delete(entry.name));
      this.#dataOffsets.set(entry.name, offset);
    }
    return offset;
  }

  /** The entry's bytes from `start` to `end` (exclusive), as a stream from the storage. */
  async read(entry: ZipEntry, start: number, end: number) {
    const data = await this.dataOffset(entry);
    return this.storage.readStream(this.path, { start: data + start, end: data + end });
  }

  /** The entry's bytes whole, as a stream; only a stored entry. */
  async open(entry: ZipEntry): Promise<Readable> {
    if (entry.method !== 0)
      throw new Error(`${this.path}: ${entry.name} is compressed; only stored entries are read`);
    return this.read(entry, 0, entry.size);
  }

  /**
   * The segments an archived HLS playlist lists, in its order, each an entry of its own
   * folder; a segment it lists and the zip lacks is an error naming both.
   */
  async segments(playlist: ZipEntry): Promise<ZipEntry[]> {
    const folder = playlist.name.slice(0, playlist.name.lastIndexOf('/') + 1);
    return playlistUris((await this.readAll(playlist)).toString('utf8')).map((uri) => {
      const entry = this.entries.get(`${folder}${uri}`);
      if (!entry) throw new Error(`${this.path}: ${playlist.name} lists ${uri}, which the zip lacks`);
      return entry;
    });
  }

  /** A small entry (a playlist) whole. */
  async readAll(entry: ZipEntry): Promise<Buffer> {
    const data = await this.dataOffset(entry);
    return readRange(this.storage, this.path, data, data + entry.compressedSize);
  }
}

/** One central directory record: the entry it describes and where its bytes lie in the directory. */
export interface CentralRecord {
  entry: ZipEntry;
  start: number;
  end: number;
}

/** A zip's central directory as stored: its offset in the zip, its bytes and its records. */
export interface CentralDirectory {
  offset: number;
  bytes: Buffer;
  records: CentralRecord[];
}

/** The end records and the central directory of the zip `path` of `bytes` bytes, in two or three reads. */
export async function readCentralDirectory(
  storage: Storage,
  path: string,
  bytes: number,
): Promise<CentralDirectory> {
  const tailStart = Math.max(0, bytes - (22 + 0xffff + 20));
  const tail = await readRange(storage, path, tailStart, bytes);
  let at = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD) {
      at = i;
      break;
    }
  }
  if (at < 0) throw new Error(`${path}: not a zip file (no end of central directory record)`);
  let count = tail.readUInt16LE(at + 10);
  let size = tail.readUInt32LE(at + 12);
  let offset = tail.readUInt32LE(at + 16);
  if (count === 0xffff || size === 0xffffffff || offset === 0xffffffff) {
    const locator = at - 20;
    if (locator < 0 || tail.readUInt32LE(locator) !== ZIP64_LOCATOR)
      throw new Error(`${path}: zip64 end record locator missing`);
    const recordAt = Number(tail.readBigUInt64LE(locator + 8));
    const record = await readRange(storage, path, recordAt, recordAt + 56);
    if (record.readUInt32LE(0) !== ZIP64_EOCD) throw new Error(`${path}: zip64 end record missing`);
    count = Number(record.readBigUInt64LE(32));
    size = Number(record.readBigUInt64LE(40));
    offset = Number(record.readBigUInt64LE(48));
  }
  const directory = await readRange(storage, path, offset, offset + size);
  const records: CentralRecord[] = [];
  let p = 0;
  for (let n = 0; n < count; n++) {
    if (p + 46 > directory.length || directory.readUInt32LE(p) !== CENTRAL)
      throw new Error(`${path}: central directory entry ${n + 1} is damaged`);
    const nameLength = directory.readUInt16LE(p + 28);
    const extraLength = directory.readUInt16LE(p + 30);
    const commentLength = directory.readUInt16LE(p + 32);
    const entry: ZipEntry = {
      name: directory.subarray(p + 46, p + 46 + nameLength).toString('utf8'),
      method: directory.readUInt16LE(p + 10),
      compressedSize: directory.readUInt32LE(p + 20),
      size: directory.readUInt32LE(p + 24),
      localHeaderOffset: directory.readUInt32LE(p + 42),
    };
    readZip64Extra(directory.subarray(p + 46 + nameLength, p + 46 + nameLength + extraLength), entry);
    const end = p + 46 + nameLength + extraLength + commentLength;
    records.push({ entry, start: p, end });
    p = end;
  }
  return { offset, bytes: directory, records };
}

/**
 * A central record's bytes with its local header at `offset`: written where the record keeps
 * it (the 32-bit field, or the zip64 extra field when that one says 0xffffffff).
 */
export function recordAtOffset(record: Buffer, offset: number): Buffer {
  const copy = Buffer.from(record);
  if (copy.readUInt32LE(42) !== 0xffffffff) {
    if (offset >= 0xffffffff) throw new Error('a zip entry moved past 4 GiB without a zip64 field');
    copy.writeUInt32LE(offset, 42);
    return copy;
  }
  const nameLength = copy.readUInt16LE(28);
  const extraEnd = 46 + nameLength + copy.readUInt16LE(30);
  let p = 46 + nameLength;
  while (p + 4 <= extraEnd) {
    const id = copy.readUInt16LE(p);
    const length = copy.readUInt16LE(p + 2);
    if (id === 0x0001) {
      let q = p + 4;
      if (copy.readUInt32LE(24) === 0xffffffff) q += 8;
      if (copy.readUInt32LE(20) === 0xffffffff) q += 8;
      copy.writeBigUInt64LE(BigInt(offset), q);
      return copy;
    }
    p += 4 + length;
  }
  throw new Error('a zip central record says its offset is in a zip64 field it lacks');
}

/** The URIs a playlist lists (its lines that are neither blank nor tags), in order. */
export function playlistUris(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** Sizes and offset past 32 bits are in the zip64 extra field, in this order, when maxed out. */
function readZip64Extra(extra: Buffer, entry: ZipEntry): void {
  let p = 0;
  while (p + 4 <= extra.length) {
    const id = extra.readUInt16LE(p);
    const length = extra.readUInt16LE(p + 2);
    if (id === 0x0001) {
      let q = p + 4;
      if (entry.size === 0xffffffff && q + 8 <= p + 4 + length) {
        entry.size = Number(extra.readBigUInt64LE(q));
        q += 8;
      }
      if (entry.compressedSize === 0xffffffff && q + 8 <= p + 4 + length) {
        entry.compressedSize = Number(extra.readBigUInt64LE(q));
        q += 8;
      }
      if (entry.localHeaderOffset === 0xffffffff && q + 8 <= p + 4 + length)
        entry.localHeaderOffset = Number(extra.readBigUInt64LE(q));
      return;
    }
    p += 4 + length;
  }
}
