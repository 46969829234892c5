/**
 * The local file system behind the storage seam: today's layout, byte for byte. A run is
 * written under runs/.tmp-<run id> and committed by one atomic rename; small files
 * (latest, state) are replaced atomically (temp file, then rename).
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, sep } from 'node:path';
import { Readable } from 'node:stream';
import { ConfigError } from '../errors.ts';
import { removeIfExitingFirst } from '../util/exit-cleanup.ts';
import { makeDirectory } from '../util/fs.ts';
import { killPoint } from '../util/kill-point.ts';
import { describeSystemError, diskFullError } from '../util/system-errors.ts';
import { copyRangesThrough } from './copy-ranges.ts';
import { localChunks } from './local-chunks.ts';
import { openLocalFile } from './local-file.ts';
import { acquireLock, lockState } from './local-lock.ts';
import { hiddenPathFor, temporariesLeftBehind } from './local-temporaries.ts';
import type {
  ByteRange,
  CreateOptions,
  Lease,
  LeaseState,
  LeftoverOptions,
  ListedFile,
  OutputFile,
  RangeCopier,
  RangeSource,
  StagedFolder,
  Storage,
  StoredFile,
} from './types.ts';

/**
 * Runs `attempt`, a write or a rename into the folder of `path`, before making that folder:
 * it is there for every file but the first, and making it again costs a mkdir and a stat.
 * Only when the attempt finds the folder missing (ENOENT) is it made, and the attempt run again.
 */
async function inFolderOf(path: string, attempt: () => Promise<void>): Promise<void> {
  try {
    await attempt();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    await makeDirectory(dirname(path));
    await attempt();
  }
}

/** Files stat'ed at once by a listing. */
const STATS_AT_ONCE = 32;

/** Runs in progress on a file system: hidden by this prefix until renamed into place. */
export const TEMP_RUN_PREFIX = '.tmp-';

export interface LocalStorageOptions {
  /**
   * Nobody reads the folder before it is renamed whole (a run being written, the run's
   * scratch space): files are written under their own names, not hidden ones renamed at close.
   */
  unseen?: boolean;
}

export class LocalStorage implements Storage {
  constructor(
    readonly location: string,
    private readonly options: LocalStorageOptions = {},
  ) {}

  describe(path: string): string {
    return path === '' ? this.location : join(this.location, ...path.split('/'));
  }

  at(prefix: string): Storage {
    return new LocalStorage(this.describe(prefix), this.options);
  }

  /**
   * Folders inside the storage are made as needed; a missing root fails (a wrong output path).
   * The file is written under a hidden name and renamed into place when closed, as an object
   * appears on object storage: a reader (DuckDB on current/, the next run) never sees half.
   * In an unseen folder it is written under its name.
   */
  async create(path: string, options: CreateOptions = {}): Promise<OutputFile> {
    const absolute = this.describe(path);
    return openLocalFile(absolute, path, {
      ...options,
      hidden: !this.options.unseen,
      makeFolder: path.includes('/'),
    });
  }

  /** A rename where the scratch space is on the same file system; else a copy, renamed into place. */
  async moveIn(localPath: string, path: string): Promise<void> {
    const absolute = this.describe(path);
    try {
      await inFolderOf(absolute, () => rename(localPath, absolute));
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    }
    const hidden = hiddenPathFor(absolute);
    try {
      await copyFile(localPath, hidden);
      killPoint('local-copy-written');
      await rename(hidden, absolute);
    } catch (error) {
      await rm(hidden, { force: true });
      // copyFile's error names the source (in scratch, maybe another disk): a disk that
      // filled is the output's.
      if (error instanceof Error && diskFullError(error)) Object.assign(error, { path: absolute });
      throw error;
    }
  }

  /**
   * One rename, which a folder of new parts takes instead of a rename per file and the
   * folder made first; EEXIST or ENOTEMPTY: the folder is there, EXDEV: another file system.
   */
  async moveFolderIn(localFolder: string, path: string): Promise<boolean> {
    const absolute = this.describe(path);
    try {
      await inFolderOf(absolute, () => rename(localFolder, absolute));
      return true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' || code === 'ENOTEMPTY' || code === 'EXDEV') return false;
      throw error;
    }
  }

  async put(path: string, content: string | Uint8Array): Promise<StoredFile> {
    const absolute = this.describe(path);
    // Readers see the old content or the new, never a torn one; an unseen folder has no readers.
    const written = this.options.unseen ? absolute : hiddenPathFor(absolute);
    await inFolderOf(absolute, () => writeFile(written, content));
    if (written === absolute) return stored(path, content);
    killPoint('local-put-written');
    await rename(written, absolute);
    return stored(path, content);
  }

  async putIfAbsent(path: string, content: string): Promise<boolean> {
    const absolute = this.describe(path);
    await makeDirectory(dirname(absolute));
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(absolute, 'wx');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    }
    try {
      await handle.writeFile(content);
    } finally {
      await handle.close();
    }
    return true;
  }

  async read(path: string): Promise<Buffer | null> {
    const absolute = this.describe(path);
    try {
      // A device or a folder is not a file (reading /dev/zero would never end).
      if (!(await stat(absolute)).isFile()) {
        throw new ConfigError(`${absolute}: not a regular file`, { context: { file: absolute } });
      }
      return await readFile(absolute);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async size(path: string): Promise<number | null> {
    try {
      const found = await stat(this.describe(path));
      return found.isFile() ? found.size : null;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async readStream(path: string, range?: ByteRange): Promise<Readable> {
    const absolute = this.describe(path);
    if (range && range.end <= range.start) return Readable.from([]);
    const stream = createReadStream(absolute, range ? { start: range.start, end: range.end - 1 } : {});
    // Surfaces a missing file here rather than on the first read.
    await new Promise<void>((resolve, reject) => {
      stream.once('open', () => resolve());
      stream.once('error', reject);
    });
    return stream;
  }

  async copyRanges(
    path: string,
    source: RangeSource,
    tail: Uint8Array,
    copier?: RangeCopier,
  ): Promise<StoredFile> {
    if (!copier || !(source.storage instanceof LocalStorage))
      return copyRangesThrough(this, path, source, tail, copier?.runningSha256());
    const absolute = this.describe(path);
    // Under a hidden name until complete, as `create` writes.
    const written = this.options.unseen ? absolute : hiddenPathFor(absolute);
    const from = source.storage.describe(source.path);
    try {
      await makeDirectory(dirname(absolute));
      const copied = await copier.copyRanges(from, source.ranges, tail, written);
      if (written !== absolute) await rename(written, absolute);
      return { path, bytes: copied.bytes, sha256: copied.sha256 };
    } catch (error) {
      await rm(written, { force: true });
      throw describeSystemError(Object.assign(error as Error, { path: absolute }));
    }
  }

  readChunks(path: string, range: ByteRange, chunkBytes: number): AsyncIterable<Uint8Array> {
    return localChunks(this.describe(path), range, chunkBytes);
  }

  async *list(prefix: string): AsyncIterable<ListedFile> {
    const folder = this.describe(prefix);
    const entries = await readdir(folder, { recursive: true, withFileTypes: true }).catch(ifMissing([]));
    const paths = entries
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name));
    const files: ListedFile[] = [];
    // Several stats in flight: a folder of thousands of files (current/ of many studies) would
    // otherwise wait a thread-pool round trip per file.
    for (let at = 0; at < paths.length; at += STATS_AT_ONCE) {
      const batch = paths.slice(at, at + STATS_AT_ONCE);
      // Gone since readdir (another process's temporary file renamed into place, say): not
      // listed, as a listing of object storage holds what was there at one moment.
      const stats = await Promise.all(batch.map((absolute) => stat(absolute).catch(ifMissing(null))));
      batch.forEach((absolute, i) => {
        const found = stats[i];
        if (!found) return;
        files.push({
          path: relative(folder, absolute).split(sep).join('/'),
          bytes: found.size,
          modifiedAt: found.mtimeMs,
        });
      });
    }
    yield* files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  async listFolders(prefix: string): Promise<string[]> {
    const entries = await readdir(this.describe(prefix), { withFileTypes: true }).catch(ifMissing([]));
    return entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  }

  async delete(path: string): Promise<void> {
    await rm(this.describe(path), { force: true });
  }

  async deleteAll(prefix: string): Promise<void> {
    await rm(this.describe(prefix), { recursive: true, force: true });
  }

  async stage(prefix: string): Promise<StagedFolder> {
    const finalPath = this.describe(prefix);
    const tempPath = join(dirname(finalPath), `${TEMP_RUN_PREFIX}${basename(finalPath)}`);
    const forgetTemp = removeIfExitingFirst(tempPath);
    await makeDirectory(tempPath);
    return {
      // Under its temporary name the whole run is unseen: its files need no hidden names.
      files: new LocalStorage(tempPath, { unseen: true }),
      finalLocation: finalPath,
      async commit() {
        await rename(tempPath, finalPath);
        forgetTemp();
      },
      async discard() {
        forgetTemp();
        await rm(tempPath, { recursive: true, force: true });
      },
    };
  }

  /** A lock file holding our pid; one whose process is gone is stale and taken over. */
  async lease(path: string): Promise<Lease> {
    const lockPath = this.describe(path);
    await makeDirectory(dirname(lockPath));
    await acquireLock(lockPath);
    const forgetLock = removeIfExitingFirst(lockPath);
    return {
      async release() {
        forgetLock();
        await rm(lockPath, { force: true });
      },
    };
  }

  leaseState(path: string): Promise<LeaseState> {
    return lockState(this.describe(path));
  }

  /**
   * Under the lock nobody else owns a temporary run folder: each was left by a killed run. So
   * is a file under a temporary name (local-temporaries.ts) whose process is gone, anywhere but
   * in the run folders (written under their own names, and never again once committed).
   */
  async removeLeftovers(runsPrefix: string, options: LeftoverOptions): Promise<void> {
    for (const name of await this.#leftovers(runsPrefix, options))
      await this.deleteAll(`${runsPrefix}/${name}`);
    for (const path of await this.#temporaries(runsPrefix, options)) await rm(path, { force: true });
  }

  async hasLeftovers(runsPrefix: string, options: LeftoverOptions): Promise<boolean> {
    return (
      (await this.#leftovers(runsPrefix, options)).length > 0 ||
      (await this.#temporaries(runsPrefix, options)).length > 0
    );
  }

  async #leftovers(runsPrefix: string, options: LeftoverOptions): Promise<string[]> {
    return (await this.listFolders(runsPrefix)).filter(
      (name) => name.startsWith(TEMP_RUN_PREFIX) && options.owns(name.slice(TEMP_RUN_PREFIX.length)),
    );
  }

  #temporaries(runsPrefix: string, options: LeftoverOptions): Promise<string[]> {
    return temporariesLeftBehind(this.location, {
      skip: [runsPrefix],
      cutoff: Date.now() - options.graceMs,
    });
  }
}

function stored(path: string, content: string | Uint8Array): StoredFile {
  const bytes = typeof content === 'string' ? Buffer.byteLength(content) : content.byteLength;
  return { path, bytes, sha256: createHash('sha256').update(content).digest('hex') };
}

function ifMissing<T>(fallback: T): (error: unknown) => T {
  return (error) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return fallback;
    throw error;
  };
}
