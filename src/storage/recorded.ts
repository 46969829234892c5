/**
 * A storage that remembers every file written through it, with the size and sha256 counted
 * while writing: the run's manifest lists them without reading a byte back.
 */
import type { CreateOptions, OutputFile, Storage, StoredFile } from './types.ts';

export interface RecordedStorage extends Storage {
  /** Every file written and not deleted since, sorted by path. */
  written(): StoredFile[];
}

export function recordWrites(storage: Storage): RecordedStorage {
  const files = new Map<string, StoredFile>();
  const record = (file: StoredFile): StoredFile => {
    files.set(file.path, file);
    return file;
  };
  return {
    location: storage.location,
    describe: (path) => storage.describe(path),
    at: (prefix) => storage.at(prefix),
    putIfAbsent: (path, content) => storage.putIfAbsent(path, content),
    // Not recorded: only the current dataset's publishing moves files in, outside any run.
    moveIn: (localPath, path) => storage.moveIn(localPath, path),
    moveFolderIn: (localFolder, path) => storage.moveFolderIn(localFolder, path),
    read: (path) => storage.read(path),
    size: (path) => storage.size(path),
    readStream: (path, range) => storage.readStream(path, range),
    readChunks: (path, range, chunkBytes) => storage.readChunks(path, range, chunkBytes),
    copyRanges: async (path, source, tail, copier) =>
      record(await storage.copyRanges(path, source, tail, copier)),
    list: (prefix) => storage.list(prefix),
    listFolders: (prefix) => storage.listFolders(prefix),
    stage: (prefix) => storage.stage(prefix),
    lease: (path) => storage.lease(path),
    leaseState: (path) => storage.leaseState(path),
    removeLeftovers: (runsPrefix, options) => storage.removeLeftovers(runsPrefix, options),
    hasLeftovers: (runsPrefix, options) => storage.hasLeftovers(runsPrefix, options),
    written: () => [...files.values()].sort((a, b) => a.path.localeCompare(b.path)),
    async create(path: string, options?: CreateOptions): Promise<OutputFile> {
      const file = await storage.create(path, options);
      return {
        path: file.path,
        get bytes() {
          return file.bytes;
        },
        write: (chunk: string | Uint8Array) => file.write(chunk),
        close: async () => record(await file.close()),
        abort: () => file.abort(),
      };
    },
    put: async (path: string, content: string | Uint8Array) => record(await storage.put(path, content)),
    async delete(path: string) {
      files.delete(path);
      await storage.delete(path);
    },
    async deleteAll(prefix: string) {
      for (const path of files.keys()) if (path.startsWith(`${prefix}/`)) files.delete(path);
      await storage.deleteAll(prefix);
    },
  };
}
