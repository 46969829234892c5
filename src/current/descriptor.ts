/**
 * Which descriptor of current/ a run writes, so that no two shards ever write one object and
 * no descriptor names a file that another writer removes.
 *
 * - current/datapackage.json describes all of current/. Only a writer that runs alone writes
 *   it: an unsharded run (it holds the pipeline's one lock) or `study-export describe`, the
 *   step after a night's shards. Each says what it covers (`covers`: the runs its pointers
 *   named).
 * - Shard K of N writes current/datapackage-shard-K-of-N.json: its own buckets' newest parts and
 *   its studies' sheets and workbooks, which only that shard replaces, so the descriptor stays
 *   true until that shard's next run rewrites it.
 *
 * A shard's descriptor for another shard count (N changed) names parts that the new shards
 * replaced; the whole-dataset writers remove such descriptors once a file they name is gone.
 */
import { BUCKETS, bucketOf } from '../buckets.ts';
import type { Format } from '../config/schema.ts';
import { idOf } from '../names.ts';
import { studyFormats } from '../output/formats/index.ts';
import { readPart, STUDY_FOLDER_PREFIX } from '../output/formats/parquet-read.ts';
import { CURRENT_DIR, currentDescriptorPath, shardOfCurrentDescriptor } from '../output/layout.ts';
import { type Shard, shardLabel, shardOfBucket } from '../shard.ts';
import { tableNames } from '../tables/index.ts';
import { currentPackage, type PackageScope } from './package.ts';
import { newestPart, ofUncommittedRun, partitionName, type UncommittedRuns } from './parts.ts';
import type { CurrentStore } from './store.ts';
import { studyFolderName } from './wide.ts';

/** A shard, as current/ knows it: its label (shard-2-of-3) and the buckets it owns. */
export interface DescriptorShard {
  label: string;
  owns(bucket: number): boolean;
}

/** The shard as current/ knows it (its own descriptor); undefined unsharded. */
export function descriptorShard(shard: Shard | undefined): DescriptorShard | undefined {
  if (!shard) return undefined;
  return { label: shardLabel(shard), owns: (bucket) => shardOfBucket(bucket, shard.count) === shard.index };
}

export interface DescriptorInput {
  store: CurrentStore;
  name: string;
  formats: readonly Format[];
  baseUrl?: string;
  /** The shard whose own descriptor is written; absent: current/datapackage.json. */
  shard?: DescriptorShard | undefined;
  /** The pointers (latest, latest-shard-K-of-N) and the runs they named: what it is as of. */
  runs: Record<string, string | null>;
  /** Runs whose parts are left out: published by a run that was never committed. */
  uncommitted?: UncommittedRuns;
}

/** The descriptor a shard (or, without one, a whole-dataset writer) writes. */
export function descriptorPath(shard: DescriptorShard | undefined): string {
  return currentDescriptorPath(shard?.label);
}

/**
 * Writes the descriptor from a listing of current/; when only its `created` would change, it
 * is left as it is. A whole-dataset writer then removes shards' descriptors that went stale.
 */
export async function writeCurrentDescriptor(input: DescriptorInput): Promise<void> {
  const { store } = input;
  const scope = input.shard
    ? await shardScope(store, input.shard, input)
    : wholeScope(input.runs, input.uncommitted);
  const described = await currentPackage(store, {
    name: input.name,
    formats: input.formats,
    ...(input.baseUrl !== undefined ? { baseUrl: input.baseUrl } : {}),
    scope,
  });
  const path = descriptorPath(input.shard);
  const existing = await store.read(path);
  if (!existing || !sameBut('created', JSON.parse(existing.toString('utf8')), described)) {
    const output = await store.create(path);
    await output.write(`${JSON.stringify(described, null, 2)}\n`);
    await output.close();
  }
  if (!input.shard) await removeStaleShardDescriptors(store);
}

function wholeScope(runs: Record<string, string | null>, uncommitted?: UncommittedRuns): PackageScope {
  return {
    ...(uncommitted && uncommitted.size > 0
      ? { keep: (path: string) => !ofUncommittedRun(path, uncommitted) }
      : {}),
    covers: { buckets: 'all', runs },
  };
}

/** One shard's buckets: their parts, and the sheets of the studies their `studies` parts hold. */
async function shardScope(
  store: CurrentStore,
  shard: DescriptorShard,
  input: Pick<DescriptorInput, 'runs' | 'uncommitted'>,
): Promise<PackageScope> {
  const buckets = Array.from({ length: BUCKETS }, (_, bucket) => bucket).filter((bucket) =>
    shard.owns(bucket),
  );
  const owned = new Set(buckets.map(partitionName));
  const folders = await studyFoldersOf(store, owned, input.uncommitted);
  const ownedPartition = (partition: string) =>
    owned.has(partition) ||
    (partition.startsWith(STUDY_FOLDER_PREFIX) &&
      shard.owns(bucketOf(idOf(partition.slice(STUDY_FOLDER_PREFIX.length), '%'))));
  return {
    keep(path) {
      const [top, folder] = path.split('/');
      if (top === undefined || folder === undefined) return false;
      if (input.uncommitted && ofUncommittedRun(path, input.uncommitted)) return false;
      if ((tableNames as string[]).includes(top)) return ownedPartition(folder);
      return studyFormats.some((format) => format.folder === top) && folders.has(folder);
    },
    note: `This descriptor covers only the buckets of ${shard.label.replaceAll('-', ' ')}; each shard describes its own in datapackage-shard-K-of-N.json, and datapackage.json, written by \`study-export describe\` once every shard has run, describes all of them.`,
    covers: { buckets: [...owned].sort(), runs: input.runs },
  };
}

/** The sheet folders (study_id=<id>) of the studies whose rows the buckets' `studies` parts hold. */
async function studyFoldersOf(
  store: CurrentStore,
  buckets: ReadonlySet<string>,
  uncommitted?: UncommittedRuns,
): Promise<Set<string>> {
  const parts = new Map<string, { name: string; bytes: number }[]>();
  for await (const file of store.list(`${CURRENT_DIR}/studies`)) {
    const [partition, name] = file.path.split('/');
    if (partition === undefined || name === undefined || !buckets.has(partition)) continue;
    parts.set(partition, [...(parts.get(partition) ?? []), { name, bytes: file.bytes }]);
  }
  const folders = new Set<string>();
  for (const [partition, files] of parts) {
    const newest = files.find(
      (file) =>
        file.name ===
        newestPart(
          files.map((f) => f.name),
          uncommitted,
        ),
    );
    if (!newest) continue;
    const path = `${CURRENT_DIR}/studies/${partition}/${newest.name}`;
    for await (const rows of readPart(store, path, newest.bytes, 'studies')) {
      for (const row of rows) folders.add(studyFolderName(row.study_id));
    }
  }
  return folders;
}

/** Shards' descriptors that name a file no longer in current/ (their shard count changed). */
async function removeStaleShardDescriptors(store: CurrentStore): Promise<void> {
  const present = new Set<string>();
  const descriptors: string[] = [];
  for await (const file of store.list(CURRENT_DIR)) {
    present.add(file.path);
    if (shardOfCurrentDescriptor(file.path) !== null) descriptors.push(file.path);
  }
  for (const path of descriptors) {
    const text = await store.read(`${CURRENT_DIR}/${path}`);
    if (text === null || namesOnly(text, present)) continue;
    await store.delete(`${CURRENT_DIR}/${path}`);
  }
}

/** Whether every path a descriptor's resources name is among `present`. */
function namesOnly(text: Buffer, present: ReadonlySet<string>): boolean {
  let described: { resources?: { path?: string | string[] }[] };
  try {
    described = JSON.parse(text.toString('utf8'));
  } catch {
    return false;
  }
  return (described.resources ?? []).every((resource) =>
    [resource.path ?? []].flat().every((path) => present.has(path)),
  );
}

function sameBut(key: string, a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const without = (o: Record<string, unknown>) => JSON.stringify({ ...o, [key]: null });
  return without(a) === without(b);
}
