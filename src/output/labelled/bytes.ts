/**
 * Little-endian bytes appended to a growing buffer: both statistics formats are written as
 * records of fixed-size integers, floats and padded text.
 */
export class Bytes {
  #buffer: Buffer;
  #length = 0;

  constructor(capacity = 64 * 1024) {
    this.#buffer = Buffer.allocUnsafe(capacity);
  }

  get length(): number {
    return this.#length;
  }

  #room(bytes: number): number {
    const at = this.#length;
    if (at + bytes > this.#buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.#buffer.length * 2, at + bytes));
      this.#buffer.copy(grown, 0, 0, at);
      this.#buffer = grown;
    }
    this.#length = at + bytes;
    return at;
  }

  u8(value: number): this {
    this.#buffer[this.#room(1)] = value;
    return this;
  }

  u16(value: number): this {
    this.#buffer.writeUInt16LE(value, this.#room(2));
    return this;
  }

  i32(value: number): this {
    this.#buffer.writeInt32LE(value, this.#room(4));
    return this;
  }

  u32(value: number): this {
    this.#buffer.writeUInt32LE(value, this.#room(4));
    return this;
  }

  u64(value: number): this {
    this.#buffer.writeBigUInt64LE(BigInt(value), this.#room(8));
    return this;
  }

  /** An unsigned integer in `size` bytes (Stata's 6-byte observation numbers). */
  uint(value: number, size: number): this {
    this.#buffer.writeUIntLE(value, this.#room(size), size);
    return this;
  }

  f64(value: number): this {
    this.#buffer.writeDoubleLE(value, this.#room(8));
    return this;
  }

  /** ASCII or UTF-8 text as it is, or raw bytes. */
  bytes(value: Uint8Array | string): this {
    const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
    this.#buffer.set(bytes, this.#room(bytes.length));
    return this;
  }

  /** `value` in exactly `size` bytes: cut, or padded with `pad` (a byte). */
  fixed(value: Uint8Array | string, size: number, pad: number): this {
    const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
    const at = this.#room(size);
    const used = Math.min(bytes.length, size);
    this.#buffer.set(bytes.subarray(0, used), at);
    this.#buffer.fill(pad, at + used, at + size);
    return this;
  }

  /** Everything appended so far, as a buffer of its own; the builder starts empty again. */
  take(): Buffer {
    const taken = Buffer.from(this.#buffer.subarray(0, this.#length));
    this.#length = 0;
    return taken;
  }
}
