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

  /** Makes room for `bytes` more; returns where they go. Call it before reading `#buffer`. */
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
    const at = this.#room(1);
    this.#buffer[at] = value;
    return this;
  }

  u16(value: number): this {
    const at = this.#room(2);
    this.#buffer.writeUInt16LE(value, at);
    return this;
  }

  i32(value: number): this {
    const at = this.#room(4);
    this.#buffer.writeInt32LE(value, at);
    return this;
  }

  u32(value: number): this {
    const at = this.#room(4);
    this.#buffer.writeUInt32LE(value, at);
    return this;
  }

  u64(value: number): this {
    const at = this.#room(8);
    this.#buffer.writeBigUInt64LE(BigInt(value), at);
    return this;
  }

  /** An unsigned integer in `size` bytes (Stata's 6-byte observation numbers). */
  uint(value: number, size: number): this {
    const at = this.#room(size);
    this.#buffer.writeUIntLE(value, at, size);
    return this;
  }

  f64(value: number): this {
    const at = this.#room(8);
    this.#buffer.writeDoubleLE(value, at);
    return this;
  }

  /** ASCII or UTF-8 text as it is, or raw bytes. */
  bytes(value: Uint8Array | string): this {
    const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
    const at = this.#room(bytes.length);
    this.#buffer.set(bytes, at);
    return this;
  }

  /** `count` copies of one byte. */
  repeat(byte: number, count: number): this {
    const at = this.#room(count);
    this.#buffer.fill(byte, at, at + count);
    return this;
  }

  /** bytes [from, to) of `source` in exactly `size` bytes, padded with `pad`; no copy made first. */
  copy(source: Buffer, from: number, to: number, size: number, pad: number): this {
    const at = this.#room(size);
    const used = source.copy(this.#buffer, at, from, Math.min(to, from + size));
    this.#buffer.fill(pad, at + used, at + size);
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

  /**
   * Everything appended so far, without a copy: valid until the next append or `clear()`, so a
   * writer hands it to a write that says when the bytes may be reused, then clears.
   */
  view(): Buffer {
    return this.#buffer.subarray(0, this.#length);
  }

  clear(): void {
    this.#length = 0;
  }

  /** Everything appended so far, as a buffer of its own; the builder starts empty again. */
  take(): Buffer {
    const taken = Buffer.from(this.#buffer.subarray(0, this.#length));
    this.#length = 0;
    return taken;
  }
}
