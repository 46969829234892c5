/**
 * Just enough of reading ISO BMFF (MP4) boxes to take a fragmented MP4 apart: its boxes, and
 * each track fragment's run of samples (their sizes, durations, composition offsets, sync
 * flags, and where their bytes are).
 */

export interface Box {
  type: string;
  /** Offsets in the buffer: the box's start, its payload's start, its end. */
  start: number;
  body: number;
  end: number;
}

export class Mp4FormatError extends Error {}

export const viewOf = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);

export function* boxesIn(bytes: Uint8Array, start: number, end: number): Generator<Box> {
  const view = viewOf(bytes);
  let at = start;
  while (at + 8 <= end) {
    let size = view.getUint32(at);
    let body = at + 8;
    if (size === 1) {
      size = Number(view.getBigUint64(at + 8));
      body = at + 16;
    } else if (size === 0) size = end - at;
    const type = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
    if (size < body - at || at + size > end) throw new Mp4FormatError(`box ${type} overruns its parent`);
    yield { type, start: at, body, end: at + size };
    at += size;
  }
}

/** The boxes of `type` in `parent` (the whole buffer when null). */
export function children(bytes: Uint8Array, parent: Box | null, type: string): Box[] {
  const [from, to] = parent ? [parent.body, parent.end] : [0, bytes.length];
  return [...boxesIn(bytes, from, to)].filter((box) => box.type === type);
}

export function child(bytes: Uint8Array, parent: Box | null, type: string): Box {
  const found = children(bytes, parent, type)[0];
  if (!found) throw new Mp4FormatError(`no ${type} box in ${parent?.type ?? 'the file'}`);
  return found;
}

/** A 32-bit field of a full box that sits at one offset in version 0 and another in version 1. */
export function uint32At(bytes: Uint8Array, box: Box, v0: number, v1: number): number {
  return viewOf(bytes).getUint32(box.body + (bytes[box.body] === 1 ? v1 : v0));
}

/** A field of a full box that is 32 bits in version 0 and 64 in version 1. */
export function versionedAt(bytes: Uint8Array, box: Box, v0: number, v1: number): number {
  const view = viewOf(bytes);
  return bytes[box.body] === 1 ? Number(view.getBigUint64(box.body + v1)) : view.getUint32(box.body + v0);
}

/** What a track's samples are when a fragment does not say: trex's default duration, size, flags. */
export interface SampleDefaults {
  duration: number;
  size: number;
  flags: number;
}

/** The sample defaults of each track of an init section (moov's mvex), by track id. */
export function trackDefaults(init: Uint8Array): Map<number, SampleDefaults> {
  const view = viewOf(init);
  const mvex = children(init, child(init, null, 'moov'), 'mvex')[0];
  const trexes = mvex ? children(init, mvex, 'trex') : [];
  return new Map(
    trexes.map((trex) => [
      view.getUint32(trex.body + 4),
      {
        duration: view.getUint32(trex.body + 12),
        size: view.getUint32(trex.body + 16),
        flags: view.getUint32(trex.body + 20),
      },
    ]),
  );
}

/** One track fragment's samples, their bytes contiguous in the buffer read. */
export interface SampleRun {
  track: number;
  /** Decode time of its first sample (tfdt), on the track's time scale. */
  decodeTime: number;
  sizes: number[];
  durations: number[];
  /** Composition time offsets: when each sample is shown after it is decoded. */
  offsets: number[];
  sync: boolean[];
  dataStart: number;
  dataLength: number;
}

/** is_non_sync_sample, in a sample's flags. */
const NON_SYNC = 0x10000;

/** The sample runs of the movie fragments in `bytes` (moof, mdat, moof, mdat, …), in order. */
export function readFragments(bytes: Uint8Array, defaults: ReadonlyMap<number, SampleDefaults>): SampleRun[] {
  const runs: SampleRun[] = [];
  for (const moof of children(bytes, null, 'moof')) {
    let base = moof.start;
    for (const traf of children(bytes, moof, 'traf')) {
      const trafRuns = readTraf(bytes, moof, traf, base, defaults);
      runs.push(...trafRuns);
      const last = trafRuns.at(-1);
      if (last) base = last.dataStart + last.dataLength;
    }
  }
  return runs;
}

function readTraf(
  bytes: Uint8Array,
  moof: Box,
  traf: Box,
  base: number,
  defaults: ReadonlyMap<number, SampleDefaults>,
): SampleRun[] {
  const view = viewOf(bytes);
  const tfhd = child(bytes, traf, 'tfhd');
  const flags = view.getUint32(tfhd.body) & 0xffffff;
  const track = view.getUint32(tfhd.body + 4);
  if (flags & 0x1) throw new Mp4FormatError('a fragment gives its data an absolute base offset');
  let at = tfhd.body + 8 + (flags & 0x2 ? 4 : 0);
  const field = (flag: number, fallback: number | undefined) => {
    if (!(flags & flag)) return fallback;
    at += 4;
    return view.getUint32(at - 4);
  };
  const fallback = defaults.get(track);
  const duration = field(0x8, fallback?.duration);
  const size = field(0x10, fallback?.size);
  const sampleFlags = field(0x20, fallback?.flags) ?? 0;
  let time = versionedAt(bytes, child(bytes, traf, 'tfdt'), 4, 4);
  let dataStart = flags & 0x20000 ? moof.start : base;
  const runs: SampleRun[] = [];
  for (const trun of children(bytes, traf, 'trun')) {
    const run = readTrun(bytes, trun, { duration, size, flags: sampleFlags });
    const start = run.dataOffset === null ? dataStart : moof.start + run.dataOffset;
    const dataLength = run.sizes.reduce((sum, n) => sum + n, 0);
    if (start + dataLength > bytes.length) throw new Mp4FormatError(`track ${track}: samples overrun`);
    runs.push({ track, decodeTime: time, ...run, dataStart: start, dataLength });
    time += run.durations.reduce((sum, n) => sum + n, 0);
    dataStart = start + dataLength;
  }
  return runs;
}

function readTrun(bytes: Uint8Array, trun: Box, fallback: Partial<SampleDefaults> & { flags: number }) {
  const view = viewOf(bytes);
  const signed = bytes[trun.body] === 1;
  const flags = view.getUint32(trun.body) & 0xffffff;
  const count = view.getUint32(trun.body + 4);
  let at = trun.body + 8;
  const dataOffset = flags & 0x1 ? view.getInt32(at) : null;
  at += flags & 0x1 ? 4 : 0;
  const firstFlags = flags & 0x4 ? view.getUint32(at) : null;
  at += flags & 0x4 ? 4 : 0;
  const run = { dataOffset, sizes: [] as number[], durations: [] as number[], offsets: [] as number[] };
  const sync: boolean[] = [];
  const next = (present: number, otherwise: number | undefined, what: string) => {
    if (flags & present) {
      at += 4;
      return view.getUint32(at - 4);
    }
    if (otherwise === undefined) throw new Mp4FormatError(`a sample has no ${what}`);
    return otherwise;
  };
  for (let sample = 0; sample < count; sample++) {
    run.durations.push(next(0x100, fallback.duration, 'duration'));
    run.sizes.push(next(0x200, fallback.size, 'size'));
    const own = next(0x400, sample === 0 && firstFlags !== null ? firstFlags : fallback.flags, 'flags');
    sync.push((own & NON_SYNC) === 0);
    const offset = flags & 0x800 ? (signed ? view.getInt32(at) : view.getUint32(at)) : 0;
    at += flags & 0x800 ? 4 : 0;
    run.offsets.push(offset);
  }
  return { ...run, sync };
}
