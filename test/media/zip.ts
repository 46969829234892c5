/** Reads a zip back with yauzl, an unzipper independent of the one that wrote it. */
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
