/**
 * The records of a zip file (APPNOTE 6.3) that media.zip needs: stored entries with UTF-8
 * names, an optional data descriptor after an entry whose CRC is known only once its bytes
 * are written, and zip64 wherever a field outgrows its 32 or 16 bits: an entry of 4 GiB or
 * more has its sizes in a zip64 extra field of its local and central headers (and 8-byte
 * sizes in its data descriptor), an entry past 4 GiB into the zip its offset in the central
 * one, and the zip64 end record and locator come once the directory's offset, size or entry
 * count need them.
 */

/** General purpose flags: bit 3, sizes and CRC follow the data; bit 11, the name is UTF-8. */
const flagDataDescriptor = 0x0008;
const flagUtf8 = 0x0800;
/** "Made by" UNIX, spec 4.5 (zip64); regular file, rw-r--r--. */
const madeBy = (3 << 8) | 45;
const externalAttributes = (0o100644 << 16) >>> 0;
const max32 = 0xffff_ffff;
const max16 = 0xffff;

/** What the central directory says of one entry. */
export interface ZipEntryRecord {
  name: Buffer;
  crc32: number;
  size: number;
  /** Offset of its local header. */
  offset: number;
  dosTime: number;
  dosDate: number;
  dataDescriptor: boolean;
  /** Sizes in zip64 extra fields (4 GiB or more, or forced): decided before the local header. */
  zip64: boolean;
}

/** Whether an entry of `size` bytes needs zip64 sizes (0xffffffff itself means "see zip64"). */
export function needsZip64(size: number): boolean {
  return size >= max32;
}

/** MS-DOS time and date (local time, 2-second resolution) of `date`. */
export function dosDateTime(date: Date): { dosTime: number; dosDate: number } {
  const year = Math.max(1980, Math.min(2107, date.getFullYear()));
  return {
    dosTime: (date.getHours() << 11) | (date.getMinutes() << 5) | (date.getSeconds() >> 1),
    dosDate: ((year - 1980) << 9) | ((date.getMonth() + 1) << 5) | date.getDate(),
  };
}

function flags(entry: ZipEntryRecord): number {
  return flagUtf8 | (entry.dataDescriptor ? flagDataDescriptor : 0);
}

/**
 * The local header; with a data descriptor its CRC is zero. Sizes are known before the
 * entry is written (a body in memory, or a finished temporary file), so they are stated
 * here too: in a zip64 extra field (both sizes, as APPNOTE 4.5.3 requires) with the 32-bit
 * fields at their maximum for a zip64 entry, else as zero under a data descriptor.
 */
export function localHeader(entry: ZipEntryRecord): Buffer {
  const extraLength = entry.zip64 ? 20 : 0;
  const header = Buffer.alloc(30 + entry.name.length + extraLength);
  header.writeUInt32LE(0x04034b50, 0);
  header.writeUInt16LE(entry.zip64 ? 45 : 20, 4);
  header.writeUInt16LE(flags(entry), 6);
  header.writeUInt16LE(0, 8); // stored
  header.writeUInt16LE(entry.dosTime, 10);
  header.writeUInt16LE(entry.dosDate, 12);
  if (!entry.dataDescriptor) header.writeUInt32LE(entry.crc32, 14);
  if (entry.zip64) {
    header.writeUInt32LE(max32, 18);
    header.writeUInt32LE(max32, 22);
  } else if (!entry.dataDescriptor) {
    header.writeUInt32LE(entry.size, 18);
    header.writeUInt32LE(entry.size, 22);
  }
  header.writeUInt16LE(entry.name.length, 26);
  header.writeUInt16LE(extraLength, 28);
  entry.name.copy(header, 30);
  if (entry.zip64) {
    const extra = 30 + entry.name.length;
    header.writeUInt16LE(0x0001, extra);
    header.writeUInt16LE(16, extra + 2);
    header.writeBigUInt64LE(BigInt(entry.size), extra + 4); // uncompressed
    header.writeBigUInt64LE(BigInt(entry.size), extra + 12); // compressed (stored: the same)
  }
  return header;
}

/** CRC and sizes after the entry's bytes: 8-byte sizes for a zip64 entry (APPNOTE 4.3.9.2). */
export function dataDescriptor(entry: ZipEntryRecord): Buffer {
  const record = Buffer.alloc(entry.zip64 ? 24 : 16);
  record.writeUInt32LE(0x08074b50, 0);
  record.writeUInt32LE(entry.crc32, 4);
  if (entry.zip64) {
    record.writeBigUInt64LE(BigInt(entry.size), 8);
    record.writeBigUInt64LE(BigInt(entry.size), 16);
  } else {
    record.writeUInt32LE(entry.size, 8);
    record.writeUInt32LE(entry.size, 12);
  }
  return record;
}

/**
 * The entry's central directory header. A zip64 entry's sizes, and an offset past 4 GiB
 * (or any offset, forced), go into one zip64 extra field, in the order APPNOTE 4.5.3 fixes
 * (uncompressed size, compressed size, offset), each only where its 32-bit field says
 * 0xffffffff.
 */
export function centralHeader(entry: ZipEntryRecord, forceZip64 = false): Buffer {
  const zip64Offset = forceZip64 || entry.offset >= max32;
  const fields = [...(entry.zip64 ? [entry.size, entry.size] : []), ...(zip64Offset ? [entry.offset] : [])];
  const extraLength = fields.length > 0 ? 4 + 8 * fields.length : 0;
  const header = Buffer.alloc(46 + entry.name.length + extraLength);
  header.writeUInt32LE(0x02014b50, 0);
  header.writeUInt16LE(madeBy, 4);
  header.writeUInt16LE(fields.length > 0 ? 45 : 20, 6);
  header.writeUInt16LE(flags(entry), 8);
  header.writeUInt16LE(0, 10);
  header.writeUInt16LE(entry.dosTime, 12);
  header.writeUInt16LE(entry.dosDate, 14);
  header.writeUInt32LE(entry.crc32, 16);
  header.writeUInt32LE(entry.zip64 ? max32 : entry.size, 20);
  header.writeUInt32LE(entry.zip64 ? max32 : entry.size, 24);
  header.writeUInt16LE(entry.name.length, 28);
  header.writeUInt16LE(extraLength, 30);
  // comment length, disk number start and internal attributes stay 0
  header.writeUInt32LE(externalAttributes, 38);
  header.writeUInt32LE(zip64Offset ? max32 : entry.offset, 42);
  entry.name.copy(header, 46);
  if (fields.length > 0) {
    const extra = 46 + entry.name.length;
    header.writeUInt16LE(0x0001, extra);
    header.writeUInt16LE(8 * fields.length, extra + 2);
    for (const [i, value] of fields.entries()) header.writeBigUInt64LE(BigInt(value), extra + 4 + 8 * i);
  }
  return header;
}

/**
 * The end of the zip after a central directory of `entries` entries and `size` bytes at
 * `offset`: the zip64 end record and locator when a field does not fit (or `forceZip64`),
 * then the classic end record, whose fields then all say "see zip64" (their maximum).
 */
export function endRecords(entries: number, offset: number, size: number, forceZip64 = false): Buffer {
  const zip64 = forceZip64 || entries >= max16 || offset >= max32 || size >= max32;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(zip64 ? max16 : entries, 8);
  end.writeUInt16LE(zip64 ? max16 : entries, 10);
  end.writeUInt32LE(zip64 ? max32 : size, 12);
  end.writeUInt32LE(zip64 ? max32 : offset, 16);
  if (!zip64) return end;
  const record = Buffer.alloc(56);
  record.writeUInt32LE(0x06064b50, 0);
  record.writeBigUInt64LE(44n, 4);
  record.writeUInt16LE(madeBy, 12);
  record.writeUInt16LE(45, 14);
  // this disk and the central directory's disk stay 0
  record.writeBigUInt64LE(BigInt(entries), 24);
  record.writeBigUInt64LE(BigInt(entries), 32);
  record.writeBigUInt64LE(BigInt(size), 40);
  record.writeBigUInt64LE(BigInt(offset), 48);
  const locator = Buffer.alloc(20);
  locator.writeUInt32LE(0x07064b50, 0);
  locator.writeBigUInt64LE(BigInt(offset + size), 8);
  locator.writeUInt32LE(1, 16);
  return Buffer.concat([record, locator, end]);
}
