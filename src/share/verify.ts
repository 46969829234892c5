/**
 * `study-export verify PACKAGE` of an analyst's package made by `share`: a folder, or the zip
 * `--zip` wrote (one top-level folder), local or s3://. Every file is read once: hashed against
 * datapackage.json's size and sha256, every resource present, no file it leaves out. A package
 * made with a privacy profile (its datapackage.json's `privacy`) must also hold no match of the
 * built-in detectors in any text: tables in CSV and Parquet, the workbook, the SPSS and Stata
 * files, the guides; each match left is named by file and kind, never by its text.
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { ZipIndex } from '../output/codecs/zip-index.ts';
import { walkStoredZip } from '../output/codecs/zip-reader.ts';
import { DATAPACKAGE_FILE, MANIFEST_FILE } from '../output/layout.ts';
import { hostOf, PackageScan, scannable } from '../privacy/index.ts';
import { isObjectStorage, openStorage, type S3Settings } from '../storage/index.ts';
import type { Storage } from '../storage/types.ts';

export interface PackageCheck {
  ok: boolean;
  problems: string[];
  /** Whether datapackage.json says a privacy profile made it (then its texts were scanned). */
  deidentified: boolean;
  checked: { files: number; bytes: number };
}

interface Resource {
  path?: unknown;
  bytes?: unknown;
  hash?: unknown;
}

interface Descriptor {
  resources?: Resource[];
  sources?: { path?: unknown }[];
  privacy?: { identified?: unknown };
}

/** Files whose texts are scanned: every file of an output format, and every text file. */
const scanned = scannable;

/**
 * Whether `location`, known not to be a bag (verify asks archive first), is a share package: a
 * zip whose one folder holds datapackage.json, or a folder holding datapackage.json and no
 * manifest.json (which a run has).
 */
export async function isSharePackage(location: string, s3: S3Settings = {}): Promise<boolean> {
  if (/\.zip$/i.test(location)) {
    const { storage, name } = await parentOf(location, s3);
    const bytes = await storage.size(name);
    if (bytes === null) return false;
    const names = [...(await ZipIndex.open(storage, name, bytes)).entries.keys()];
    return names.some((entry) => /^[^/]+\/datapackage\.json$/.test(entry));
  }
  const storage = await openStorage(location, s3);
  return (await storage.size(DATAPACKAGE_FILE)) !== null && (await storage.size(MANIFEST_FILE)) === null;
}

export async function verifySharePackage(location: string, s3: S3Settings = {}): Promise<PackageCheck> {
  const seen = new Map<string, { bytes: number; sha256: string }>();
  const scan = new PackageScan();
  let descriptorBytes: Buffer | null = null;
  const problems: string[] = [];
  const take = async (path: string, stream: AsyncIterable<Uint8Array>) => {
    const hash = createHash('sha256');
    const kept: Buffer[] = [];
    const keep = scanned(path);
    let size = 0;
    for await (const chunk of stream) {
      size += chunk.length;
      hash.update(chunk);
      if (keep) kept.push(Buffer.from(chunk));
    }
    seen.set(path, { bytes: size, sha256: hash.digest('hex') });
    if (path === DATAPACKAGE_FILE) descriptorBytes = Buffer.concat(kept);
    if (keep) await scan.add(path, Buffer.concat(kept));
  };
  try {
    await readFiles(location, s3, take);
  } catch (error) {
    problems.push(`${location}: cannot be read as a package (${(error as Error).message})`);
  }
  const descriptor = parseDescriptor(descriptorBytes, problems);
  checkResources(descriptor, seen, problems);
  const deidentified = descriptor?.privacy?.identified === false;
  if (deidentified)
    for (const left of scan.leftovers(serviceHosts(descriptor)))
      problems.push(
        `${left.file}: ${left.count} ${left.kind} match${left.count === 1 ? '' : 'es'} left, though the package was made with a privacy profile`,
      );
  const bytes = [...seen.values()].reduce((sum, file) => sum + file.bytes, 0);
  return { ok: problems.length === 0, problems, deidentified, checked: { files: seen.size, bytes } };
}

function parseDescriptor(bytes: Buffer | null, problems: string[]): Descriptor | null {
  if (bytes === null) {
    problems.push(`${DATAPACKAGE_FILE} is missing: not a package share made`);
    return null;
  }
  try {
    return JSON.parse(bytes.toString('utf8')) as Descriptor;
  } catch (error) {
    problems.push(`${DATAPACKAGE_FILE}: not JSON (${(error as Error).message})`);
    return null;
  }
}

/** Every resource there with its size and sha256; every file a resource. */
function checkResources(
  descriptor: Descriptor | null,
  seen: ReadonlyMap<string, { bytes: number; sha256: string }>,
  problems: string[],
): void {
  if (!descriptor) return;
  const listed = new Set<string>([DATAPACKAGE_FILE]);
  for (const resource of descriptor.resources ?? []) {
    if (typeof resource.path !== 'string') continue;
    listed.add(resource.path);
    const file = seen.get(resource.path);
    if (!file) {
      problems.push(`${resource.path}: in ${DATAPACKAGE_FILE} but not in the package`);
      continue;
    }
    if (typeof resource.bytes === 'number' && resource.bytes !== file.bytes)
      problems.push(`${resource.path}: ${file.bytes} bytes, ${DATAPACKAGE_FILE} says ${resource.bytes}`);
    if (typeof resource.hash === 'string' && resource.hash !== `sha256:${file.sha256}`)
      problems.push(`${resource.path}: sha256 ${file.sha256}, ${DATAPACKAGE_FILE} says ${resource.hash}`);
  }
  for (const path of seen.keys())
    if (!listed.has(path)) problems.push(`${path}: in the package but not in ${DATAPACKAGE_FILE}`);
}

/** The host of the service the package says its rows came from: its own address, not personal data. */
function serviceHosts(descriptor: Descriptor | null): Set<string> {
  const hosts = new Set<string>();
  for (const source of descriptor?.sources ?? []) {
    if (typeof source.path !== 'string') continue;
    const host = hostOf('URL', source.path);
    if (host) hosts.add(host);
  }
  return hosts;
}

type Take = (path: string, bytes: AsyncIterable<Uint8Array>) => Promise<void>;

/** Every file of the package, its path relative to the package's folder. */
async function readFiles(location: string, s3: S3Settings, take: Take): Promise<void> {
  if (!/\.zip$/i.test(location)) {
    const storage = await openStorage(location, s3);
    for await (const file of storage.list('')) await take(file.path, await storage.readStream(file.path));
    return;
  }
  const { storage, name } = await parentOf(location, s3);
  const bytes = await storage.size(name);
  if (bytes === null) throw new Error(`${storage.describe(name)} does not exist`);
  const inner = (path: string) => path.slice(path.indexOf('/') + 1);
  await walkStoredZip(storage, name, bytes, (path: string, stream: Readable) => take(inner(path), stream));
}

/** The folder (or bucket prefix) holding the file `location`, and its name there. */
async function parentOf(location: string, s3: S3Settings): Promise<{ storage: Storage; name: string }> {
  const trimmed = location.replace(/\/+$/, '');
  const slash = trimmed.lastIndexOf('/');
  const folder = isObjectStorage(trimmed) || slash > 0 ? trimmed.slice(0, slash) : slash === 0 ? '/' : '.';
  return { storage: await openStorage(folder, s3), name: trimmed.slice(slash + 1) };
}
