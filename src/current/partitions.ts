/**
 * What current/ holds of a bucket: its partitions (a folder per table) and the files in each,
 * read folder by folder or, for a run of many studies, from one listing of current/. A
 * partition's newest part is the partition; the others are older parts, or an unfinished write.
 */

import { readPart } from '../output/formats/parquet-read.ts';
import { CURRENT_DIR } from '../output/layout.ts';
import { type Row, type TableName, tableNames } from '../tables/index.ts';
import { newestPart, type PartSource, parsePartName, partitionPath } from './parts.ts';
import type { CurrentStore } from './store.ts';

/**
 * One listing of current/ for a run of many studies, from which each bucket's partitions and
 * each study's sheet folders are read instead of a listing of each folder (a request each on
 * object storage, where one listing request returns up to 1,000 keys). Taken when the first
 * study starts: until the run's commit only the run writes its buckets' partitions and its
 * studies' sheets (a shard owns whole buckets), so what it lists of them stays true.
 */
export class CurrentListing {
  #folders: Promise<Map<string, Partition['files']>> | null = null;

  constructor(private readonly store: CurrentStore) {}

  /** The files directly in `folder` (a path under current/). */
  async files(folder: string): Promise<Partition['files']> {
    this.#folders ??= this.#list();
    return (await this.#folders).get(folder) ?? [];
  }

  async #list(): Promise<Map<string, Partition['files']>> {
    const folders = new Map<string, Partition['files']>();
    for await (const file of this.store.list(CURRENT_DIR)) {
      const slash = file.path.lastIndexOf('/');
      if (slash === -1) continue;
      const folder = `${CURRENT_DIR}/${file.path.slice(0, slash)}`;
      const files = folders.get(folder) ?? [];
      if (files.length === 0) folders.set(folder, files);
      files.push({ name: file.path.slice(slash + 1), bytes: file.bytes });
    }
    return folders;
  }
}

export interface Partition {
  path: string;
  files: { name: string; bytes: number }[];
  /** The part to merge from: the newest Parquet part, if any. */
  previous: { path: string; bytes: number } | null;
}

export async function partitionOf(
  store: CurrentStore,
  table: TableName,
  bucket: number,
  listing?: CurrentListing,
): Promise<Partition> {
  const path = partitionPath(table, bucket);
  const files: Partition['files'] = listing ? [...(await listing.files(path))] : [];
  if (!listing) {
    for await (const file of store.list(path)) {
      if (!file.path.includes('/')) files.push({ name: file.path, bytes: file.bytes });
    }
  }
  const newest = newestPart(files.map((file) => file.name));
  const previous = newest
    ? { path: `${path}/${newest}`, bytes: files.find((file) => file.name === newest)?.bytes ?? 0 }
    : null;
  return { path, files, previous };
}

/** Every table's partition of the bucket. */
export async function partitionsOf(
  store: CurrentStore,
  bucket: number,
  listing?: CurrentListing,
): Promise<Map<TableName, Partition>> {
  const listed = await Promise.all(tableNames.map((table) => partitionOf(store, table, bucket, listing)));
  return new Map(tableNames.map((table, i) => [table, listed[i] as Partition]));
}

/** The run id of a partition's newest part (that part's files are the partition), if any. */
export function newestRun(files: Partition['files']): string | null {
  const newest = newestPart(files.map((file) => file.name));
  return newest === null ? null : (parsePartName(newest)?.runId ?? null);
}

/** Every file of the partition but the parts of run `kept`: older parts, an unfinished write. */
export function staleFiles(partition: Partition, kept: string | null): string[] {
  return partition.files
    .filter((file) => kept === null || parsePartName(file.name)?.runId !== kept)
    .map((file) => `${partition.path}/${file.name}`);
}

export async function hasFiles(
  store: CurrentStore,
  folder: string,
  listing?: CurrentListing,
): Promise<boolean> {
  // The sheet and the workbook lie directly in their folders.
  if (listing) return (await listing.files(folder)).length > 0;
  for await (const _ of store.list(folder)) return true;
  return false;
}

/** A small table's previous part whole (questions and studies: a few rows per study). */
export async function readAll<T extends TableName>(
  store: CurrentStore,
  partition: Partition,
  table: T,
): Promise<Row<T>[]> {
  const rows: Row<T>[] = [];
  if (!partition.previous) return rows;
  for await (const group of readPart(store, partition.previous.path, partition.previous.bytes, table))
    rows.push(...group);
  return rows;
}

/** The attributes part a study's sheets are built with, when the bucket has one. */
export function attributesOf(
  store: CurrentStore,
  partition: Partition,
  prepared: PartSource | undefined,
): { attributes?: PartSource } {
  if (prepared) return { attributes: prepared };
  return partition.previous ? { attributes: { store, ...partition.previous } } : {};
}
