/**
 * A plain (not fragmented) MP4's header, written once every sample is known: its samples come
 * out of movie fragments (mp4-read.ts) run after run, their bytes laid one run after another in
 * the mdat that follows the header. The header is the fragmented init section's, its tracks'
 * sample descriptions kept, with the sample tables filled in (stts, ctts, stss, stsc, stsz,
 * stco), the durations written, and an edit list per track.
 *
 * The edit lists: H.264 with B-frames is shown later than it is decoded (the reordering delay),
 * and audio and video need not start together. Each track's edit starts it at the movie's first
 * presentation time, the same instant for every track, so that they keep their places beside
 * each other and the movie starts at 0 and lasts as long as its source (as ffmpeg's MP4 muxer
 * does; MPEG-TS players start at the first presentation time the same way).
 *
 * A plain MP4 rather than the fragmented one mux.js writes: browsers take a fragmented file's
 * length from its last sample, reordering delay included, not from its header; a plain MP4's
 * length is its header's, and every player opens one. Memory: a few numbers per sample.
 */
import {
  type Box,
  boxesIn,
  child,
  children,
  Mp4FormatError,
  type SampleRun,
  uint32At,
  viewOf,
} from './mp4-read.ts';

interface TrackTables {
  sizes: number[];
  durations: number[];
  offsets: number[];
  /** 1-based numbers of the sync samples. */
  syncs: number[];
  chunks: { position: number; samples: number }[];
  decodeFrom: number;
  decodeTo: number;
  shownFrom: number;
  shownTo: number;
}

export class MovieTables {
  readonly #tracks = new Map<number, TrackTables>();

  /** `run`'s samples, its bytes at `position` in the mdat's payload. */
  add(run: SampleRun, position: number): void {
    const tables = this.#tracks.get(run.track) ?? {
      ...{ sizes: [], durations: [], offsets: [], syncs: [], chunks: [] },
      ...{ decodeFrom: run.decodeTime, decodeTo: run.decodeTime, shownFrom: Infinity, shownTo: -Infinity },
    };
    this.#tracks.set(run.track, tables);
    // A plain MP4's decode times follow each other: a gap (or an overlap) between fragments is
    // taken up by the sample before it.
    const gap = run.decodeTime - tables.decodeTo;
    const previous = tables.durations.length - 1;
    if (gap !== 0 && previous >= 0)
      tables.durations[previous] = Math.max(0, (tables.durations[previous] ?? 0) + gap);
    let time = run.decodeTime;
    run.sizes.forEach((size, i) => {
      const duration = run.durations[i] ?? 0;
      const offset = run.offsets[i] ?? 0;
      tables.sizes.push(size);
      tables.durations.push(duration);
      tables.offsets.push(offset);
      if (run.sync[i]) tables.syncs.push(tables.sizes.length);
      tables.shownFrom = Math.min(tables.shownFrom, time + offset);
      tables.shownTo = Math.max(tables.shownTo, time + offset + duration);
      time += duration;
    });
    tables.decodeTo = time;
    if (run.sizes.length > 0) tables.chunks.push({ position, samples: run.sizes.length });
  }

  /** ftyp, moov and the mdat's header, for `dataBytes` of samples after it. */
  header(init: Uint8Array, dataBytes: number): Uint8Array {
    const draft = this.#header(init, dataBytes, 0, false);
    const wide = draft.length + 16 + dataBytes > 0xffffffff;
    const length = wide ? this.#header(init, dataBytes, 0, true).length : draft.length;
    return this.#header(init, dataBytes, length, wide);
  }

  /** `samplesAt`: where the mdat's payload starts in the file, which is this header's length. */
  #header(init: Uint8Array, dataBytes: number, samplesAt: number, wide: boolean): Uint8Array {
    const ftyp = child(init, null, 'ftyp');
    const moov = child(init, null, 'moov');
    const mvhd = child(init, moov, 'mvhd');
    const movieScale = uint32At(init, mvhd, 12, 20);
    const traks = children(init, moov, 'trak').map((trak) => {
      const tkhd = child(init, trak, 'tkhd');
      const mdhd = child(init, child(init, trak, 'mdia'), 'mdhd');
      const tables = this.#tracks.get(uint32At(init, tkhd, 12, 20));
      return { trak, tkhd, tables, scale: uint32At(init, mdhd, 12, 20) };
    });
    const shown = traks.flatMap(({ tables, scale }) => (tables ? [tables.shownFrom / scale] : []));
    const start = shown.length ? Math.min(...shown) : 0;
    let movieDuration = 0;
    const trakBoxes = traks.map(({ trak, tkhd, tables, scale }) => {
      const toMovie = (time: number) => Math.max(0, Math.round((time / scale) * movieScale));
      const delay = tables ? toMovie(tables.shownFrom - start * scale) : 0;
      const shown = tables ? toMovie(tables.shownTo - tables.shownFrom) : 0;
      const edits = tables ? editList(delay, shown, tables.shownFrom - tables.decodeFrom) : new Uint8Array(0);
      movieDuration = Math.max(movieDuration, delay + shown);
      return box(
        'trak',
        withDuration(init, tkhd, 20, 28, delay + shown),
        ...(tables ? [box('edts', edits)] : []),
        mediaBox(init, trak, tables, samplesAt, wide),
      );
    });
    const mdatHeader = new Uint8Array(dataBytes + 8 > 0xffffffff ? 16 : 8);
    const view = viewOf(mdatHeader);
    if (mdatHeader.length === 16) {
      view.setUint32(0, 1);
      view.setBigUint64(8, BigInt(dataBytes + 16));
    } else view.setUint32(0, dataBytes + 8);
    mdatHeader.set(fourcc('mdat'), 4);
    return Buffer.concat([
      init.subarray(ftyp.start, ftyp.end),
      box('moov', withDuration(init, mvhd, 16, 24, movieDuration), ...trakBoxes),
      mdatHeader,
    ]);
  }
}

/** mdia with its mdhd's duration and its stbl's tables; the rest as the init section has it. */
function mediaBox(
  init: Uint8Array,
  trak: Box,
  tables: TrackTables | undefined,
  samplesAt: number,
  wide: boolean,
): Uint8Array {
  const mdia = child(init, trak, 'mdia');
  const minf = child(init, mdia, 'minf');
  const stbl = child(init, minf, 'stbl');
  const parts = inside(init, mdia).map((inner) => {
    if (inner.type === 'mdhd')
      return withDuration(init, inner, 16, 24, tables ? tables.decodeTo - tables.decodeFrom : 0);
    if (inner.type !== 'minf') return init.subarray(inner.start, inner.end);
    return box(
      'minf',
      ...inside(init, minf)
        .filter((box) => box.type !== 'stbl')
        .map((box) => init.subarray(box.start, box.end)),
      box(
        'stbl',
        init.subarray(...range(child(init, stbl, 'stsd'))),
        ...sampleTables(tables, samplesAt, wide),
      ),
    );
  });
  return box('mdia', ...parts);
}

function sampleTables(tables: TrackTables | undefined, samplesAt: number, wide: boolean): Uint8Array[] {
  const t = tables ?? { sizes: [], durations: [], offsets: [], syncs: [], chunks: [] };
  const stts = runLengths(t.durations);
  const ctts = runLengths(t.offsets);
  const stsc = runLengths(t.chunks.map((chunk) => chunk.samples));
  let chunkNumber = 1;
  const out = [
    fullBox('stts', 0, [stts.length, ...stts.flat()]),
    ...(t.offsets.some((offset) => offset !== 0)
      ? [fullBox('ctts', t.offsets.some((offset) => offset < 0) ? 1 : 0, [ctts.length, ...ctts.flat()])]
      : []),
    ...(t.syncs.length < t.sizes.length ? [fullBox('stss', 0, [t.syncs.length, ...t.syncs])] : []),
    fullBox('stsc', 0, [
      stsc.length,
      ...stsc.flatMap(([count, samples]) => {
        const entry = [chunkNumber, samples, 1];
        chunkNumber += count;
        return entry;
      }),
    ]),
    fullBox('stsz', 0, [0, t.sizes.length, ...t.sizes]),
  ];
  const offsets = t.chunks.map((chunk) => samplesAt + chunk.position);
  if (!wide) return [...out, fullBox('stco', 0, [offsets.length, ...offsets])];
  const co64 = new Uint8Array(4 + 8 * offsets.length);
  viewOf(co64).setUint32(0, offsets.length);
  for (const [i, offset] of offsets.entries()) viewOf(co64).setBigUint64(4 + 8 * i, BigInt(offset));
  return [...out, box('co64', new Uint8Array(4), co64)];
}

/** [how many in a row, value] for each run of equal values. */
function runLengths(values: readonly number[]): [number, number][] {
  const runs: [number, number][] = [];
  for (const value of values) {
    const last = runs.at(-1);
    if (last && last[1] === value) last[0]++;
    else runs.push([1, value]);
  }
  return runs;
}

/**
 * edts's elst: nothing for `delay` (movie time scale), then `duration` of the media from
 * `mediaTime` (the track's time scale) on.
 */
function editList(delay: number, duration: number, mediaTime: number): Uint8Array {
  const edits = [...(delay > 0 ? [[delay, -1]] : []), [duration, mediaTime]];
  const wide = edits.some(([length = 0, time = 0]) => length > 0xffffffff || Math.abs(time) > 0x7fffffff);
  const body = new Uint8Array(8 + edits.length * (wide ? 20 : 12));
  const view = viewOf(body);
  body[0] = wide ? 1 : 0;
  view.setUint32(4, edits.length);
  edits.forEach(([length = 0, time = 0], i) => {
    const at = 8 + i * (wide ? 20 : 12);
    if (wide) {
      view.setBigUint64(at, BigInt(length));
      view.setBigInt64(at + 8, BigInt(time));
    } else {
      view.setUint32(at, length);
      view.setInt32(at + 4, time);
    }
    view.setUint32(at + (wide ? 16 : 8), 0x00010000);
  });
  return box('elst', body);
}

/** A copy of full box `source` with the duration field (32-bit in version 0, 64 in 1) set. */
function withDuration(bytes: Uint8Array, source: Box, v0: number, v1: number, duration: number): Uint8Array {
  const copy = Uint8Array.from(bytes.subarray(source.start, source.end));
  const at = source.body - source.start;
  const view = viewOf(copy);
  if (copy[at] === 1) view.setBigUint64(at + v1, BigInt(duration));
  else if (duration <= 0xffffffff) view.setUint32(at + v0, duration);
  else throw new Mp4FormatError(`${source.type}: a duration of ${duration} does not fit version 0`);
  return copy;
}

const inside = (bytes: Uint8Array, parent: Box) => [...boxesIn(bytes, parent.body, parent.end)];

const range = (b: Box): [number, number] => [b.start, b.end];

const fourcc = (type: string) => Uint8Array.from(type, (c) => c.charCodeAt(0));

function box(type: string, ...parts: Uint8Array[]): Uint8Array {
  const size = 8 + parts.reduce((sum, part) => sum + part.length, 0);
  const out = new Uint8Array(size);
  viewOf(out).setUint32(0, size);
  out.set(fourcc(type), 4);
  let at = 8;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** A full box of 32-bit fields after its version and zero flags. */
function fullBox(type: string, version: number, fields: readonly number[]): Uint8Array {
  const body = new Uint8Array(4 + 4 * fields.length);
  const view = viewOf(body);
  body[0] = version;
  for (const [i, value] of fields.entries()) view.setUint32(4 + 4 * i, value >>> 0);
  return box(type, body);
}
