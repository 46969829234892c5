/**
 * A copy of an MPEG-TS recording that browsers play. No browser plays MPEG-TS from a <video>
 * element, and Chromium's own HLS player refuses a playlist opened from file:// (it plays one
 * only over http), so an HLS recording gathered into one `.ts` file gets, beside it, the same
 * samples in a fragmented MP4: remuxed, not re-encoded, by mux.js (video.js's transmuxer, which
 * does the same in browsers for HLS players), one fragment per HLS segment, as the `.ts` file's
 * bytes pass into the bag. The fragments go to a scratch file (an MP4's size must be known
 * before a zip or tar header, and the durations its init section holds only at the end); the
 * copy is then added from there. Memory holds one segment's samples at a time.
 *
 * mux.js remuxes H.264 video and AAC audio. A recording with another codec, or whose tracks
 * change mid-stream (one init section cannot describe both), gets no copy, and the reason.
 */
import { createReadStream } from 'node:fs';
import { type FileHandle, open, rm } from 'node:fs/promises';
import * as probe from 'mux.js/cjs/m2ts/probe.js';
import { type TransmuxedSegment, Transmuxer } from 'mux.js/cjs/mp4/transmuxer.js';
import { readFragments, type SampleDefaults, trackDefaults } from './mp4-read.ts';
import { MovieTables } from './mp4-write.ts';
import type { BagFile } from './sink.ts';

const TS_PACKET = 188;
/** How much of the first segment is kept to find its program map (RFC 8216 puts it first). */
const HEAD_BYTES = 64 * 1024;

/** The PMT stream types mux.js remuxes (ID3 timed metadata is not media, and is left out). */
const remuxed = new Set([0x1b, 0x0f, 0x15]);
const streamNames: Record<number, string> = {
  1: 'MPEG-1 video',
  2: 'MPEG-2 video',
  3: 'MPEG-1 audio',
  4: 'MPEG-2 audio',
  6: 'private data (AC-3, Opus or subtitles)',
  16: 'MPEG-4 video',
  17: 'AAC in LATM',
  36: 'H.265',
  129: 'AC-3',
  135: 'E-AC-3',
};

export type CopyResult = { file: Omit<BagFile, 'path'>; remove: () => Promise<void> } | { reason: string };

export class BrowserCopy {
  readonly #transmuxer = new Transmuxer({ remux: true });
  readonly #flushed: TransmuxedSegment[] = [];
  #head: Buffer[] = [];
  #headBytes = 0;
  #segments = 0;
  #file: FileHandle | null = null;
  #written = 0;
  #init: Uint8Array | null = null;
  #defaults: Map<number, SampleDefaults> | null = null;
  readonly #tables = new MovieTables();
  #failed: string | null = null;

  /** `local`: the scratch file the fragments are written to. */
  constructor(private readonly local: string) {
    this.#transmuxer.on('data', (segment) => this.#flushed.push(segment));
  }

  /** The next bytes of the current segment. */
  push(chunk: Uint8Array): void {
    if (this.#failed) return;
    if (this.#segments === 0 && this.#headBytes < HEAD_BYTES) {
      this.#head.push(Buffer.from(chunk));
      this.#headBytes += chunk.length;
    }
    this.#attempt(() => this.#transmuxer.push(chunk));
  }

  /** The segment is whole: its samples become one fragment, written to the scratch file. */
  async endSegment(): Promise<void> {
    if (this.#failed) return;
    if (this.#segments++ === 0) {
      this.#failed = unsupportedStreams(Buffer.concat(this.#head));
      this.#head = [];
      if (this.#failed) return;
    }
    this.#attempt(() => this.#transmuxer.flush());
    const segments = this.#flushed.splice(0);
    for (const segment of segments) {
      if (this.#failed) return;
      if (!this.#init) {
        this.#init = Uint8Array.from(segment.initSegment);
        this.#attempt(() => {
          this.#defaults = trackDefaults(segment.initSegment);
        });
        this.#file = await open(this.local, 'w');
      } else if (!Buffer.from(segment.initSegment).equals(this.#init)) {
        this.#failed = 'its tracks change during the recording';
        return;
      }
      await this.#addSamples(segment.data);
    }
  }

  /** Each run of samples of `fragments` into the scratch file, and into the sample tables. */
  async #addSamples(fragments: Uint8Array): Promise<void> {
    const defaults = this.#defaults;
    if (!defaults) return;
    let runs: ReturnType<typeof readFragments> = [];
    this.#attempt(() => {
      runs = readFragments(fragments, defaults);
    });
    for (const run of runs) {
      this.#tables.add(run, this.#written);
      await this.#file?.write(fragments.subarray(run.dataStart, run.dataStart + run.dataLength));
      this.#written += run.dataLength;
    }
  }

  /** The copy: its header, then the samples from the scratch file; or why there is none. */
  async finish(): Promise<CopyResult> {
    await this.#file?.close();
    const remove = () => rm(this.local, { force: true });
    const header = this.#init && !this.#failed ? this.#header(this.#init) : null;
    if (!header || this.#written === 0) {
      await remove();
      return { reason: this.#failed ?? 'no video or audio samples were found in it' };
    }
    const local = this.local;
    return {
      file: {
        size: header.length + this.#written,
        open: async () => withHead(header, createReadStream(local, { highWaterMark: 1 << 20 })),
      },
      remove,
    };
  }

  #header(init: Uint8Array): Uint8Array | null {
    let header: Uint8Array | null = null;
    this.#attempt(() => {
      header = this.#tables.header(init, this.#written);
    });
    return header;
  }

  /** mux.js and the box reader throw on streams they cannot read: that ends the copy, not the bag. */
  #attempt(step: () => void): void {
    try {
      step();
    } catch (error) {
      this.#failed = `it could not be remuxed: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
}

async function* withHead(head: Uint8Array, rest: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  yield head;
  yield* rest;
}

/** Why the segment starting with `head` cannot be remuxed (a codec mux.js lacks), or null. */
function unsupportedStreams(head: Buffer): string | null {
  let pmtPid: number | undefined;
  for (let at = 0; at + TS_PACKET <= head.length; at += TS_PACKET) {
    const packet = head.subarray(at, at + TS_PACKET);
    if (packet[0] !== 0x47) return 'it is not an MPEG-TS stream of 188-byte packets';
    const type = probe.parseType(packet, pmtPid);
    if (type === 'pat') pmtPid = probe.parsePat(packet);
    else if (type === 'pmt') {
      const streams = probe.parsePmt(packet);
      if (!streams) continue;
      const others = Object.values(streams).filter((stream) => !remuxed.has(stream));
      if (others.length === 0) return null;
      const names = others.map((stream) => streamNames[stream] ?? `stream type 0x${stream.toString(16)}`);
      return `it holds ${[...new Set(names)].join(', ')}, which the remuxer does not take`;
    }
  }
  return 'no program map was found at the start of its first segment';
}
