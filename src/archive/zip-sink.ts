/**
 * A bag as one zip: stored entries (recordings are compressed already, and a repository
 * checks the bytes, not a deflate stream), every name flagged UTF-8 (bit 11), each entry's
 * CRC-32 computed as its bytes pass and written after them in a data descriptor, zip64 where
 * a size or offset needs it; the records are media.zip's (src/media/zip-format.ts). Every
 * entry carries the same time, so the same bag gives the same zip.
 */
import { crc32 } from 'node:zlib';
import {
  centralHeader,
  dataDescriptor,
  dosDateTime,
  endRecords,
  localHeader,
  needsZip64,
  type ZipEntryRecord,
} from '../output/codecs/zip-format.ts';
import type { OutputFile, Storage } from '../storage/types.ts';
import { type BagFile, type BagSink, copyHashed, type Digests, noHash } from './sink.ts';

export async function openZipSink(
  storage: Storage,
  fileName: string,
  bagName: string,
  time: Date,
): Promise<BagSink> {
  const output = await storage.create(fileName, { sha256: noHash });
  return new ZipSink(storage.describe(fileName), output, bagName, time);
}

class ZipSink implements BagSink {
  readonly #records: ZipEntryRecord[] = [];
  #offset = 0;
  readonly #dos: { dosTime: number; dosDate: number };

  constructor(
    readonly location: string,
    private readonly output: OutputFile,
    private readonly bagName: string,
    time: Date,
  ) {
    // The time's UTC fields as the zip's (local, zone-less) fields: the same on every machine.
    this.#dos = dosDateTime(
      new Date(
        time.getUTCFullYear(),
        time.getUTCMonth(),
        time.getUTCDate(),
        time.getUTCHours(),
        time.getUTCMinutes(),
        time.getUTCSeconds(),
      ),
    );
  }

  async add(file: BagFile): Promise<Digests> {
    const record: ZipEntryRecord = {
      name: Buffer.from(`${this.bagName}/${file.path}`, 'utf8'),
      crc32: 0,
      size: file.size,
      offset: this.#offset,
      ...this.#dos,
      dataDescriptor: true,
      zip64: needsZip64(file.size),
    };
    await this.emit(localHeader(record));
    let crc = 0;
    const digests = await copyHashed(
      file,
      (chunk) => this.emit(chunk),
      (chunk) => {
        crc = crc32(chunk, crc);
      },
    );
    record.crc32 = crc;
    await this.emit(dataDescriptor(record));
    this.#records.push(record);
    return digests;
  }

  async finish(): Promise<void> {
    const start = this.#offset;
    for (const record of this.#records) await this.emit(centralHeader(record));
    await this.emit(endRecords(this.#records.length, start, this.#offset - start));
    await this.output.close();
  }

  abort(): Promise<void> {
    return this.output.abort();
  }

  private async emit(chunk: Uint8Array): Promise<void> {
    this.#offset += chunk.length;
    await this.output.write(chunk);
  }
}
