/**
 * What `verify` checks of an SPSS system file, reading it once from start to end: the header
 * (the product's own: little-endian, bytecode compression, a case count), every dictionary
 * record up to the termination record, and the compressed cases, whose 8-byte units must make
 * exactly the declared number of whole cases. A file cut short, padded or rewritten fails.
 */

/** Reads exactly the bytes asked for from a stream of chunks. */
class ChunkReader {
  #buffer = Buffer.alloc(0);
  readonly #chunks: AsyncIterator<Uint8Array>;
  offset = 0;

  constructor(chunks: AsyncIterable<Uint8Array>) {
    this.#chunks = chunks[Symbol.asyncIterator]();
  }

  /** `count` bytes, or fewer at the end of the file. */
  async take(count: number): Promise<Buffer> {
    while (this.#buffer.length < count) {
      const next = await this.#chunks.next();
      if (next.done) break;
      this.#buffer =
        this.#buffer.length === 0 ? Buffer.from(next.value) : Buffer.concat([this.#buffer, next.value]);
    }
    const taken = this.#buffer.subarray(0, count);
    this.#buffer = this.#buffer.subarray(taken.length);
    this.offset += taken.length;
    return taken;
  }

  /** What is buffered, or the next chunk; empty at the end of the file. */
  async next(): Promise<Buffer> {
    if (this.#buffer.length === 0) {
      const next = await this.#chunks.next();
      if (next.done) return Buffer.alloc(0);
      this.#buffer = Buffer.from(next.value);
    }
    const chunk = this.#buffer;
    this.#buffer = Buffer.alloc(0);
    this.offset += chunk.length;
    return chunk;
  }

  async exactly(count: number, what: string): Promise<Buffer> {
    const bytes = await this.take(count);
    if (bytes.length < count) throw new Error(`ends inside ${what} (byte ${this.offset})`);
    return bytes;
  }
}

/** The problems of a .sav (none: it reads whole). */
export async function checkSav(chunks: AsyncIterable<Uint8Array>): Promise<string[]> {
  const reader = new ChunkReader(chunks);
  try {
    const header = await reader.exactly(176, 'the header');
    if (header.toString('latin1', 0, 4) !== '$FL2' || header.readInt32LE(64) !== 2) {
      return ['not an SPSS system file in the layout study-export writes'];
    }
    const caseUnits = header.readInt32LE(68);
    const compression = header.readInt32LE(72);
    const cases = header.readInt32LE(80);
    if (compression !== 1 || cases < 0 || caseUnits <= 0) {
      return [
        `header: compression ${compression}, ${cases} cases, ${caseUnits} units a case (expected bytecode compression and a count)`,
      ];
    }
    const units = await dictionaryUnits(reader);
    if (units !== caseUnits) return [`${units} units of variables, the header says ${caseUnits}`];
    const read = await dataUnits(reader);
    if (read % caseUnits !== 0) return [`the data ends inside a case (${read} units, ${caseUnits} a case)`];
    if (read / caseUnits !== cases) return [`${read / caseUnits} cases, the header says ${cases}`];
    return [];
  } catch (error) {
    return [(error as Error).message];
  }
}

/** Walks the dictionary to its termination record; returns the variable records' count. */
async function dictionaryUnits(reader: ChunkReader): Promise<number> {
  let units = 0;
  for (;;) {
    const type = (await reader.exactly(4, 'a record')).readInt32LE(0);
    if (type === 999) {
      await reader.exactly(4, 'the termination record');
      return units;
    }
    if (type === 2) {
      const record = await reader.exactly(28, 'a variable record');
      units++;
      if (record.readInt32LE(4) === 1) {
        const length = (await reader.exactly(4, 'a variable label')).readInt32LE(0);
        await reader.exactly(Math.ceil(length / 4) * 4, 'a variable label');
      }
      await reader.exactly(Math.abs(record.readInt32LE(8)) * 8, 'missing values');
    } else if (type === 3) {
      const count = (await reader.exactly(4, 'value labels')).readInt32LE(0);
      for (let i = 0; i < count; i++) {
        const label = await reader.exactly(9, 'a value label');
        await reader.exactly(Math.ceil((label[8]! + 1) / 8) * 8 - 1, 'a value label');
      }
    } else if (type === 4) {
      const count = (await reader.exactly(4, 'value label variables')).readInt32LE(0);
      await reader.exactly(count * 4, 'value label variables');
    } else if (type === 6) {
      const lines = (await reader.exactly(4, 'documents')).readInt32LE(0);
      await reader.exactly(lines * 80, 'documents');
    } else if (type === 7) {
      const head = await reader.exactly(12, 'an extension record');
      await reader.exactly(head.readInt32LE(4) * head.readInt32LE(8), 'an extension record');
    } else {
      throw new Error(`unknown record type ${type} at byte ${reader.offset - 4}`);
    }
  }
}

/**
 * Counts the compressed data's 8-byte units up to the end-of-data code or the file's end: each
 * block is 8 command bytes, then 8 bytes for each code 253 among them.
 */
async function dataUnits(reader: ChunkReader): Promise<number> {
  let units = 0;
  let codesLeft = 0;
  let raw = 0;
  let skip = 0;
  let ended = false;
  for (let chunk = await reader.next(); chunk.length > 0; chunk = await reader.next()) {
    let at = 0;
    while (at < chunk.length) {
      if (skip > 0) {
        const skipped = Math.min(skip, chunk.length - at);
        skip -= skipped;
        at += skipped;
        continue;
      }
      if (ended) throw new Error('bytes after the end of the data');
      if (codesLeft === 0) {
        codesLeft = 8;
        raw = 0;
      }
      const code = chunk[at++]!;
      codesLeft--;
      if (code === 252) {
        ended = true;
        skip = raw * 8 + codesLeft;
        codesLeft = 0;
        continue;
      }
      if (code !== 0) units++;
      if (code === 253) raw++;
      if (codesLeft === 0) skip = raw * 8;
    }
  }
  if (skip > 0 || codesLeft > 0) throw new Error('the data ends inside a block');
  return units;
}
