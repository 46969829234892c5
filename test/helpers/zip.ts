/** Reads a zip back with yauzl, an unzipper independent of the one that wrote it. */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import yauzl from 'yauzl';

export interface ZipEntryInfo {
  name: string;
  compressionMethod: number;
  size: number;
  sha256: string;
  text: string | null;
}

export async function readZip(path: string, textSuffixes: string[] = ['.m3u8']): Promise<ZipEntryInfo[]> {
  return eachEntry(
    path,
    (entry) => textSuffixes.some((suffix) => entry.fileName.endsWith(suffix)),
    (entry, read) => ({
      name: entry.fileName,
      compressionMethod: entry.compressionMethod,
      size: entry.uncompressedSize,
      sha256: read.sha256,
      text: read.text,
    }),
  );
}

/**
 * Every entry with yauzl, each read to its end (which checks its size and CRC-32), in order:
 * its SHA-256, and its text where `keepText` asks for it.
 */
function eachEntry<T>(
  path: string,
  keepText: (entry: yauzl.Entry) => boolean,
  describe: (entry: yauzl.Entry, read: { sha256: string; text: string | null }) => T,
): Promise<T[]> {
  const described: T[] = [];
  return new Promise((resolve, reject) => {
    yauzl.open(
      path,
      { lazyEntries: true, validateEntrySizes: true, strictFileNames: true },
      (openError, zip) => {
        if (openError || !zip) return reject(openError);
        zip.on('error', reject);
        zip.on('end', () => resolve(described));
        zip.on('entry', (entry: yauzl.Entry) => {
          zip.openReadStream(entry, (streamError, stream) => {
            if (streamError || !stream) return reject(streamError);
            const hash = createHash('sha256');
            const chunks: Buffer[] = [];
            const text = keepText(entry);
            stream.on('data', (chunk: Buffer) => {
              hash.update(chunk);
              if (text) chunks.push(chunk);
            });
            stream.on('error', reject);
            stream.on('end', () => {
              const sha256 = hash.digest('hex');
              described.push(
                describe(entry, { sha256, text: text ? Buffer.concat(chunks).toString('utf8') : null }),
              );
              zip.readEntry();
            });
          });
        });
        zip.readEntry();
      },
    );
  });
}

/** What a reader says of one entry: sizes, CRC-32, local header offset, the ids of its extra fields. */
export interface ZipEntryFacts {
  name: string;
  size: number;
  compressedSize: number;
  crc32: number;
  offset: number;
  /** Extra field ids of the central header (1: zip64). */
  extraIds: number[];
  /** SHA-256 of the bytes read back (the reader checks them against the CRC-32 or size). */
  sha256: string;
}

/** Every entry as yauzl reads it (central directory values, each entry's bytes read to its end). */
export function zipFactsByYauzl(path: string): Promise<ZipEntryFacts[]> {
  return eachEntry(
    path,
    () => false,
    (entry, read) => ({
      name: entry.fileName,
      size: entry.uncompressedSize,
      compressedSize: entry.compressedSize,
      crc32: entry.crc32,
      offset: entry.relativeOffsetOfLocalHeader,
      extraIds: entry.extraFields.map((field) => field.id),
      sha256: read.sha256,
    }),
  );
}

/**
 * Python's zipfile on the same zip (python3 -c): every entry opened through its local header
 * and read to its end, which checks its CRC-32.
 */
const pythonFacts = `
import hashlib, json, struct, sys, zipfile
entries = []
with zipfile.ZipFile(sys.argv[1]) as archive:
    for info in archive.infolist():
        digest = hashlib.sha256()
        with archive.open(info) as stream:
            for chunk in iter(lambda: stream.read(1 << 20), b''):
                digest.update(chunk)
        ids, extra = [], info.extra
        while len(extra) >= 4:
            kind, length = struct.unpack('<HH', extra[:4])
            ids.append(kind)
            extra = extra[4 + length:]
        entries.append({'name': info.filename, 'size': info.file_size, 'compressedSize': info.compress_size,
                        'crc32': info.CRC, 'offset': info.header_offset, 'extraIds': ids, 'sha256': digest.hexdigest()})
print(json.dumps(entries))
`;

export function zipFactsByPython(path: string): ZipEntryFacts[] {
  const out = execFileSync('python3', ['-c', pythonFacts, path], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(out) as ZipEntryFacts[];
}

/** `unzip -t` (Info-ZIP): tests every entry's CRC-32; returns its report. */
export function unzipTest(path: string): string {
  return execFileSync('unzip', ['-t', path], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}
