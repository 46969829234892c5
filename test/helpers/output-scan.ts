/**
 * Looks for strings in every byte of an output folder, each file opened the way a reader
 * would: as it is stored, gunzipped (.gz), every entry of a zip (media.zip, a workbook's XML,
 * zips inside zips), and a Parquet file's values decoded (dictionary pages and compression hide
 * its strings from a plain search). A needle is also looked for as XML escapes it, and a
 * recording's checksum also as the SHA-256 of every file and zip entry. Written apart from
 * the tool's code: yauzl, zlib and hyparquet, nothing of src/.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { parquetReadObjects } from 'hyparquet';
import yauzl from 'yauzl';

export interface Found {
  /** The file, and inside it the entry (`media.zip!a/b.mp4`) or view (`#values`). */
  where: string;
  needle: string;
}

const xmlEscaped = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function zipEntries(bytes: Buffer): Promise<{ name: string; data: Buffer }[]> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(bytes, { lazyEntries: true }, (error, zip) => {
      if (error) return reject(error);
      const entries: { name: string; data: Buffer }[] = [];
      zip.on('error', reject);
      zip.on('end', () => resolve(entries));
      zip.on('entry', (entry: yauzl.Entry) => {
        if (entry.fileName.endsWith('/')) return zip.readEntry();
        zip.openReadStream(entry, (openError, stream) => {
          if (openError) return reject(openError);
          const chunks: Buffer[] = [];
          stream.on('data', (chunk: Buffer) => chunks.push(chunk));
          stream.on('error', reject);
          stream.on('end', () => {
            entries.push({ name: entry.fileName, data: Buffer.concat(chunks) });
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
  });
}

const isZip = (bytes: Buffer) => bytes.length > 4 && bytes.readUInt32LE(0) === 0x04034b50;
const isGzip = (bytes: Buffer) => bytes.length > 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
const isParquet = (bytes: Buffer) =>
  bytes.length > 8 && bytes.subarray(0, 4).toString() === 'PAR1' && bytes.subarray(-4).toString() === 'PAR1';

/** Every view of `bytes` named `where`: itself, and what it holds. */
async function* views(where: string, bytes: Buffer): AsyncIterable<{ where: string; bytes: Buffer }> {
  yield { where, bytes };
  if (isGzip(bytes)) yield* views(`${where}#gunzipped`, gunzipSync(bytes));
  if (isZip(bytes))
    for (const entry of await zipEntries(bytes)) yield* views(`${where}!${entry.name}`, entry.data);
  if (isParquet(bytes)) {
    const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    const rows = await parquetReadObjects({ file });
    const text = JSON.stringify(rows, (_key, value) => (typeof value === 'bigint' ? String(value) : value));
    yield { where: `${where}#values`, bytes: Buffer.from(text, 'utf8') };
  }
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

/**
 * Where any of `texts` (ids, answers) or `checksums` (SHA-256 hex of recordings) occurs in
 * the files under `dir`. An empty list: found nowhere.
 */
export async function scanOutput(
  dir: string,
  texts: readonly string[],
  checksums: readonly string[] = [],
): Promise<Found[]> {
  const found: Found[] = [];
  const needles = [...texts, ...checksums].filter((needle) => needle.length > 0);
  const forms = needles.map((needle) => ({
    needle,
    forms: [...new Set([needle, xmlEscaped(needle), JSON.stringify(needle).slice(1, -1)])].map((form) =>
      Buffer.from(form, 'utf8'),
    ),
  }));
  const sums = new Set(checksums);
  for (const path of await filesUnder(dir)) {
    const name = relative(dir, path);
    for await (const view of views(name, await readFile(path))) {
      for (const { needle, forms: variants } of forms)
        if (variants.some((form) => view.bytes.includes(form))) found.push({ where: view.where, needle });
      const digest = createHash('sha256').update(view.bytes).digest('hex');
      if (sums.has(digest)) found.push({ where: `${view.where} (its bytes)`, needle: digest });
    }
  }
  return found;
}
