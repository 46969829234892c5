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

export function readZip(path: string, textSuffixes: string[] = ['.m3u8']): Promise<ZipEntryInfo[]> {
  return readWithCallbacks(path, textSuffixes, []);
}

function readWithCallbacks(
  path: string,
  textSuffixes: string[],
  entries: ZipEntryInfo[],
): Promise<ZipEntryInfo[]> {
  return new Promise((resolve, reject) => {
    yauzl.open(
      path,
      { lazyEntries: true, validateEntrySizes: true, strictFileNames: true },
      (openError, zip) => {
        if (openError || !zip) return reject(openError);
        zip.on('error', reject);
        zip.on('end', () => resolve(entries));
        zip.on('entry', (entry: yauzl.Entry) => {
          zip.openReadStream(entry, (streamError, stream) => {
            if (streamError || !stream) return reject(streamError);
            const hash = createHash('sha256');
            const chunks: Buffer[] = [];
            const keepText = textSuffixes.some((suffix) => entry.fileName.endsWith(suffix));
            stream.on('data', (chunk: Buffer) => {
              hash.update(chunk);
              if (keepText) chunks.push(chunk);
            });
            stream.on('error', reject);
            stream.on('end', () => {
              entries.push({
                name: entry.fileName,
                compressionMethod: entry.compressionMethod,
                size: entry.uncompressedSize,
                sha256: hash.digest('hex'),
                text: keepText ? Buffer.concat(chunks).toString('utf8') : null,
              });
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
  const facts: ZipEntryFacts[] = [];
  return new Promise((resolve, reject) => {
    yauzl.open(
      path,
      { lazyEntries: true, validateEntrySizes: true, strictFileNames: true },
      (openError, zip) => {
        if (openError || !zip) return reject(openError);
        zip.on('error', reject);
        zip.on('end', () => resolve(facts));
        zip.on('entry', (entry: yauzl.Entry) => {
          zip.openReadStream(entry, (streamError, stream) => {
            if (streamError || !stream) return reject(streamError);
            const hash = createHash('sha256');
            stream.on('data', (chunk: Buffer) => hash.update(chunk));
            stream.on('error', reject);
            stream.on('end', () => {
              facts.push({
                name: entry.fileName,
                size: entry.uncompressedSize,
                compressedSize: entry.compressedSize,
                crc32: entry.crc32,
                offset: entry.relativeOffsetOfLocalHeader,
                extraIds: entry.extraFields.map((field) => field.id),
                sha256: hash.digest('hex'),
              });
              zip.readEntry();
            });
          });
        });
        zip.readEntry();
      },
    );
  });
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
