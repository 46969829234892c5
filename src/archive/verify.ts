/**
 * `study-export verify` of a bag made by `archive`: a folder, or one zip or tar file, local or
 * s3://. Each file is read once and hashed with every manifest's algorithm in that pass; then
 * RFC 8493's checks: bagit.txt, every payload file of every manifest present with its digest,
 * no payload file that the manifests leave out, Payload-Oxum, every tag manifest. Complete:
 * the recordings the bag lists as missing (recordings.csv) are named, and make it partial.
 */
import { createHash } from 'node:crypto';
import Papa from 'papaparse';
import { ZipIndex } from '../output/codecs/zip-index.ts';
import { walkStoredZip } from '../output/codecs/zip-reader.ts';
import { PackageScan, scannable } from '../privacy/index.ts';
import { isObjectStorage, openStorage, type S3Settings } from '../storage/index.ts';
import type { Storage } from '../storage/types.ts';
import {
  ALGORITHMS,
  type Algorithm,
  BAG_INFO_TXT,
  BAGIT_TXT,
  manifestName,
  parseManifest,
  tagManifestName,
} from './tags.ts';
import { readTar } from './tar-reader.ts';

export interface BagCheck {
  ok: boolean;
  problems: string[];
  notes: string[];
  /** Recordings the bag lists as missing. */
  missing: number;
  checked: { files: number; bytes: number };
}

interface Seen {
  bytes: number;
  digests: Record<Algorithm, string>;
}

/** Files kept whole while the bag is read: the tag files, the list of recordings, the runs. */
const keptWhole = (path: string) =>
  !path.startsWith('data/') || path === 'data/recordings.csv' || path === RUNS_JSON;
const RUNS_JSON = 'data/provenance/runs.json';
/** Payload files whose texts a bag made with a privacy profile must hold no personal data in. */
const scanned = (path: string) => path.startsWith('data/') && scannable(path);

/**
 * Whether `location` is a bag: a .tar file, a .zip file whose one folder holds bagit.txt (or
 * that cannot be read: checking it says why), or a folder holding bagit.txt.
 */
export async function isBag(location: string, s3: S3Settings = {}): Promise<boolean> {
  if (/\.tar$/i.test(location)) return true;
  if (/\.zip$/i.test(location)) {
    const { storage, name } = await parentOf(location, s3);
    try {
      const index = await ZipIndex.open(storage, name, await sizeOf(storage, name));
      return [...index.entries.keys()].some(
        (entry) => entry.endsWith(`/${BAGIT_TXT}`) && entry.split('/').length === 2,
      );
    } catch {
      return true;
    }
  }
  return (await (await openStorage(location, s3)).read(BAGIT_TXT)) !== null;
}

export async function verifyBag(location: string, s3: S3Settings = {}): Promise<BagCheck> {
  const seen = new Map<string, Seen>();
  const whole = new Map<string, Buffer>();
  const scan = new PackageScan();
  const take = async (path: string, bytes: AsyncIterable<Uint8Array>) => {
    const hashes = ALGORITHMS.map((algorithm) => createHash(algorithm));
    const kept: Buffer[] = [];
    const keep = keptWhole(path) || scanned(path);
    let size = 0;
    for await (const chunk of bytes) {
      size += chunk.length;
      for (const hash of hashes) hash.update(chunk);
      if (keep) kept.push(Buffer.from(chunk));
    }
    const digests = Object.fromEntries(
      ALGORITHMS.map((a, i) => [a, hashes[i]?.digest('hex') ?? '']),
    ) as Seen['digests'];
    seen.set(path, { bytes: size, digests });
    if (keptWhole(path)) whole.set(path, Buffer.concat(kept));
    if (scanned(path)) await scan.add(path, Buffer.concat(kept));
  };
  const problems: string[] = [];
  try {
    await readEntries(location, s3, take);
  } catch (error) {
    problems.push(`${location}: cannot be read as a bag (${(error as Error).message})`);
  }
  const check = checkBag(seen, whole, problems);
  const info = whole.get(BAG_INFO_TXT)?.toString('utf8') ?? '';
  if (/^Privacy: de-identified/m.test(info)) {
    for (const left of scan.leftovers(serviceHosts(whole.get(RUNS_JSON))))
      check.problems.push(
        `${left.file}: ${left.count} ${left.kind} match${left.count === 1 ? '' : 'es'} left, though the bag was made with a privacy profile`,
      );
    check.ok = check.problems.length === 0;
  }
  return check;
}

/** The hosts of the service the bag's runs exported from (runs.json): its own address, not personal data. */
function serviceHosts(runs: Buffer | undefined): Set<string> {
  const hosts = new Set<string>();
  if (!runs) return hosts;
  for (const [, url] of runs.toString('utf8').matchAll(/"service"\s*:\s*"([^"]+)"/g))
    try {
      hosts.add(new URL(url as string).hostname.replace(/^\[|\]$/g, '').toLowerCase());
    } catch {}
  return hosts;
}

type Take = (path: string, bytes: AsyncIterable<Uint8Array>) => Promise<void>;

/** Every file of the bag, its path relative to the bag's top folder. */
async function readEntries(location: string, s3: S3Settings, take: Take): Promise<void> {
  const zip = /\.zip$/i.test(location);
  const tar = /\.tar$/i.test(location);
  if (!zip && !tar) {
    const storage = await openStorage(location, s3);
    for await (const file of storage.list('')) await take(file.path, await storage.readStream(file.path));
    return;
  }
  const { storage, name } = await parentOf(location, s3);
  const inner = (path: string) => path.slice(path.indexOf('/') + 1);
  if (tar) {
    await readTar(await storage.readStream(name), async (entry, bytes) => {
      if (entry.type === '0' || entry.type === '\0') await take(inner(entry.path), bytes);
      else for await (const _ of bytes);
    });
    return;
  }
  const size = await sizeOf(storage, name);
  await walkStoredZip(storage, name, size, (path, stream) => take(inner(path), stream));
}

/** The folder (or bucket prefix) holding the file `location`, and its name there. */
async function parentOf(location: string, s3: S3Settings): Promise<{ storage: Storage; name: string }> {
  const slash = location.replace(/\/+$/, '').lastIndexOf('/');
  const folder = isObjectStorage(location) || slash > 0 ? location.slice(0, slash) : '.';
  return { storage: await openStorage(folder || '/', s3), name: location.slice(slash + 1) };
}

async function sizeOf(storage: Storage, name: string): Promise<number> {
  for await (const file of storage.list('')) if (file.path === name) return file.bytes;
  throw new Error(`${storage.describe(name)} does not exist`);
}

function checkBag(seen: Map<string, Seen>, whole: Map<string, Buffer>, problems: string[]): BagCheck {
  const notes: string[] = [];
  const text = (path: string) => whole.get(path)?.toString('utf8') ?? null;
  const bagit = text(BAGIT_TXT);
  if (bagit === null) problems.push(`${BAGIT_TXT} is missing: not a bag`);
  else if (!/^BagIt-Version: 1\.0\r?\nTag-File-Character-Encoding: UTF-8\r?\n?$/.test(bagit))
    problems.push(`${BAGIT_TXT}: not "BagIt-Version: 1.0" and "Tag-File-Character-Encoding: UTF-8"`);
  const listed = new Set<string>();
  for (const algorithm of ALGORITHMS) {
    const name = manifestName(algorithm);
    const manifest = text(name);
    if (manifest === null) {
      problems.push(`${name} is missing`);
      continue;
    }
    compare(parseManifest(manifest, name), algorithm, seen, problems, listed, name);
  }
  for (const path of seen.keys())
    if (path.startsWith('data/') && !listed.has(path))
      problems.push(`${path}: in the payload but in no manifest`);
  checkOxum(text(BAG_INFO_TXT), seen, problems);
  for (const algorithm of ALGORITHMS) {
    const manifest = text(tagManifestName(algorithm));
    if (manifest !== null)
      compare(
        parseManifest(manifest, tagManifestName(algorithm)),
        algorithm,
        seen,
        problems,
        new Set(),
        tagManifestName(algorithm),
      );
  }
  const missing = missingRecordings(text('data/recordings.csv'), notes);
  const payload = [...seen].filter(([path]) => path.startsWith('data/'));
  return {
    ok: problems.length === 0,
    problems,
    notes,
    missing,
    checked: { files: seen.size, bytes: payload.reduce((sum, [, file]) => sum + file.bytes, 0) },
  };
}

function compare(
  parsed: ReturnType<typeof parseManifest>,
  algorithm: Algorithm,
  seen: Map<string, Seen>,
  problems: string[],
  listed: Set<string>,
  name: string,
): void {
  problems.push(...parsed.problems);
  for (const [path, digest] of parsed.entries) {
    listed.add(path);
    const file = seen.get(path);
    if (!file) problems.push(`${path}: listed in ${name} but missing from the bag`);
    else if (file.digests[algorithm] !== digest)
      problems.push(`${path}: its ${algorithm} differs from ${name}'s`);
  }
}

function checkOxum(info: string | null, seen: Map<string, Seen>, problems: string[]): void {
  if (info === null) return;
  const oxum = /^Payload-Oxum:\s*(\d+)\.(\d+)\s*$/m.exec(info);
  if (!oxum) return;
  const payload = [...seen].filter(([path]) => path.startsWith('data/'));
  const bytes = payload.reduce((sum, [, file]) => sum + file.bytes, 0);
  if (Number(oxum[1]) !== bytes || Number(oxum[2]) !== payload.length)
    problems.push(
      `${BAG_INFO_TXT}: Payload-Oxum ${oxum[1]}.${oxum[2]}, but the payload is ${bytes}.${payload.length}`,
    );
}

function missingRecordings(csv: string | null, notes: string[]): number {
  if (csv === null) return 0;
  const rows = Papa.parse<Record<string, string>>(csv, { header: true, skipEmptyLines: true }).data;
  const missing = rows.filter((row) => row.in_bag === 'no');
  for (const row of missing)
    notes.push(
      `recording missing from the bag: response ${row.response_id}, turn ${row.turn}, ${row.kind}: ${row.note}`,
    );
  return missing.length;
}
