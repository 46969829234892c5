/**
 * The storage seam: every byte of a run's output is written, read back, listed and removed
 * through a `Storage`, whether it lives in a local folder (local.ts) or in an S3-compatible
 * bucket (s3.ts). Paths are relative and '/'-separated, whatever the platform; a storage
 * rooted elsewhere is `at(prefix)`.
 */
import type { Readable } from 'node:stream';

/** A file as written: its size and sha256 are counted while the bytes pass, not read back. */
export interface StoredFile {
  path: string;
  bytes: number;
  sha256: string;
}

export interface ListedFile {
  /** Relative to the prefix that was listed. */
  path: string;
  bytes: number;
  /** Milliseconds since the epoch. */
  modifiedAt: number;
}

/**
 * The SHA-256 of a file's bytes as they pass: on this thread by default, on a hashing
 * thread for media.zip (src/media/hashing-thread.ts).
 */
export interface RunningSha256 {
  /** Takes `bytes` in order; once it resolves the caller may reuse them. */
  update(bytes: Uint8Array): void | Promise<void>;
  digest(): string | Promise<string>;
}

/** A byte range of a file, `end` exclusive. */
export interface ByteRange {
  start: number;
  end: number;
}

/** Ranges of a storage's file, which `Storage.copyRanges` writes as a new file. */
export interface RangeSource {
  storage: Storage;
  path: string;
  ranges: readonly ByteRange[];
}

/**
 * Another thread that copies ranges of a local file into a new one and hashes them as it goes
 * (src/media/hashing-thread.ts), or hashes bytes written on this one.
 */
export interface RangeCopier {
  copyRanges(
    path: string,
    ranges: readonly ByteRange[],
    tail: Uint8Array,
    to: string,
  ): Promise<{ bytes: number; sha256: string }>;
  runningSha256(): RunningSha256;
}

/** How a file is written. */
export interface CreateOptions {
  /** Where its SHA-256 is computed; by default on this thread as the bytes pass. */
  sha256?: RunningSha256;
}

/** One file being written as a stream (on object storage nothing is visible before close). */
export interface OutputFile {
  readonly path: string;
  /** Bytes written so far. */
  readonly bytes: number;
  /** Resolves when the bytes may be reused and the writer is ready for more (backpressure). */
  write(chunk: string | Uint8Array): Promise<void>;
  close(): Promise<StoredFile>;
  /** Stops writing and removes whatever was written. */
  abort(): Promise<void>;
}

/** A run's folder until it is committed, and the step that makes it a run. */
export interface StagedFolder {
  /** Where the run's files are written. */
  files: Storage;
  /** Where the run is once committed (for messages and results). */
  finalLocation: string;
  commit(): Promise<void>;
  discard(): Promise<void>;
}

/** A run's hold on its pipeline: no other run of it may start until it is released. */
export interface Lease {
  release(): Promise<void>;
}

/** Who holds a lease: nobody, a run that died (the next `lease` takes it over), or a live run. */
export type LeaseState = { held: 'no' } | { held: 'dead' } | { held: 'live'; by: string };

export interface LeftoverOptions {
  /**
   * What a run of another machine left (its process cannot be asked whether it lives) is
   * removed only once it is this old: a staged run on object storage, a temporary file.
   */
  graceMs: number;
  /** The file whose presence makes a run folder a committed run. */
  manifest: string;
  /** Only the runs this run may clear (a shard clears its own). */
  owns: (runId: string) => boolean;
}

export interface Storage {
  /** Where this storage is rooted: an absolute folder or s3://bucket/prefix. */
  readonly location: string;
  /** `path` as a user finds it: a file path or an s3:// URL. */
  describe(path: string): string;
  /** The same storage rooted at `prefix`. */
  at(prefix: string): Storage;
  create(path: string, options?: CreateOptions): Promise<OutputFile>;
  /** A small file in one call; replaces it as a whole (readers see the old or the new). */
  put(path: string, content: string | Uint8Array): Promise<StoredFile>;
  /**
   * Creates `path` only if it does not exist; false when it does. Where the server ignores
   * conditional writes this is only as good as a read before the write (docs/object-storage.md).
   */
  putIfAbsent(path: string, content: string): Promise<boolean>;
  /**
   * Takes in a finished local file (from the run's scratch space) as `path`, which appears
   * whole or not at all; the local file may be gone afterwards.
   */
  moveIn(localPath: string, path: string): Promise<void>;
  /**
   * Takes in a finished local folder as the folder `path`, with all its files at once, when
   * there is no folder `path` yet. False when it cannot (the folder exists, or the storage
   * has no folders to rename): nothing moved, and the files go one by one with `moveIn`.
   */
  moveFolderIn(localFolder: string, path: string): Promise<boolean>;
  /** The whole file, or null when there is none. */
  read(path: string): Promise<Buffer | null>;
  /** The file's size in bytes, or null when there is none; reads none of its bytes. */
  size(path: string): Promise<number | null>;
  /** The file's bytes as a stream; `end` is exclusive. */
  readStream(path: string, range?: ByteRange): Promise<Readable>;
  /**
   * Writes `path` as `ranges` of `source`'s file followed by `tail`; gives it as stored. With
   * `copier` and a local source on a local storage the copier's thread reads, hashes and writes
   * (this thread stays free for other files); otherwise the bytes pass through this thread.
   */
  copyRanges(path: string, source: RangeSource, tail: Uint8Array, copier?: RangeCopier): Promise<StoredFile>;
  /**
   * A range of the file in chunks of up to `chunkBytes` (`end` exclusive), each valid only
   * until the next is asked for: a local file is read into two buffers in turn; object
   * storage gives its body's chunks.
   */
  readChunks(path: string, range: ByteRange, chunkBytes: number): AsyncIterable<Uint8Array>;
  /** Every file under `prefix` (recursively), paths relative to it. */
  list(prefix: string): AsyncIterable<ListedFile>;
  /** The names of the folders directly under `prefix`. */
  listFolders(prefix: string): Promise<string[]>;
  delete(path: string): Promise<void>;
  /** Removes every file under `prefix`. */
  deleteAll(prefix: string): Promise<void>;
  /**
   * Opens a run's folder, `prefix`: written under a temporary name and renamed into place
   * on a file system; written in place on object storage, where the manifest, written last,
   * is what makes it a run.
   */
  stage(prefix: string): Promise<StagedFolder>;
  /**
   * Takes the lease `path` (the pipeline's lock), or fails with a ConfigError naming who
   * holds it. One left by a run that died is taken over (see each implementation).
   */
  lease(path: string): Promise<Lease>;
  /** Who holds the lease `path` now; reads only. */
  leaseState(path: string): Promise<LeaseState>;
  /**
   * Removes what runs that were killed left behind under `runsPrefix` (see each implementation).
   * Call it holding the lease: a run in progress is no leftover.
   */
  removeLeftovers(runsPrefix: string, options: LeftoverOptions): Promise<void>;
  /** Whether removeLeftovers would find anything to remove; reads only. */
  hasLeftovers(runsPrefix: string, options: LeftoverOptions): Promise<boolean>;
}
