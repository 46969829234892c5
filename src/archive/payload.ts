/**
 * The payload as it is written: each file added to the sink as soon as it is ready (a
 * recording streamed, a table from the scratch file it was written to, a page from memory),
 * its digests kept for the manifests. Files come from three places: memory, the local scratch
 * folder, and the output's storage.
 */
import { createReadStream } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import Papa from 'papaparse';
import { type TableFormat, tableFormatOfFile, tableFormats } from '../output/formats/index.ts';
import { createTableWriters } from '../output/table-writers.ts';
import { LocalStorage } from '../storage/local.ts';
import type { Storage } from '../storage/types.ts';
import { type Row, type TableName, type TableRows, tableNames } from '../tables/index.ts';
import type { BagFile, BagSink, Digests } from './sink.ts';

/** The folder of data/ that holds the tables. */
const TABLES_DIR = 'tables';

export interface Written {
  /** Path inside the bag ('data/…'). */
  path: string;
  digests: Digests;
}

/** Forbidden in a bag's names: the manifests would need percent-encoding (RFC 8493 2.1.3). */
const unportable = /[%\r\n\\]/;

export class Payload {
  readonly written: Written[] = [];
  readonly #byPath = new Map<string, Digests>();
  readonly #lowerCase = new Set<string>();

  constructor(private readonly sink: BagSink) {}

  /** Adds `file`; a name that is not portable, or a case-only twin of another, is a bug, not data. */
  async add(file: BagFile): Promise<Digests> {
    const lower = file.path.toLowerCase();
    if (unportable.test(file.path) || this.#lowerCase.has(lower) || !file.path.startsWith('data/'))
      throw new Error(`${file.path}: not a portable, distinct payload path`);
    this.#lowerCase.add(lower);
    const digests = await this.sink.add(file);
    this.written.push({ path: file.path, digests });
    this.#byPath.set(file.path, digests);
    return digests;
  }

  /** The digests of a file added, by its path under data/. */
  digestsOf(dataPath: string): Digests | undefined {
    return this.#byPath.get(`data/${dataPath}`);
  }
}

export function memoryFile(path: string, content: string | Buffer): BagFile {
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  return { path, size: bytes.length, open: async () => [bytes] };
}

export async function diskFile(path: string, local: string): Promise<BagFile> {
  const { size } = await stat(local);
  return { path, size, open: async () => createReadStream(local, { highWaterMark: 1 << 20 }) };
}

export function storedFile(path: string, storage: Storage, source: string, size: number): BagFile {
  return { path, size, open: () => storage.readStream(source) };
}

/**
 * Every table of the study in every table format of the registry (CSV without a byte order
 * mark) under data/tables/, written to scratch and then added; resolves with their paths under
 * data/.
 */
export async function addTables(
  payload: Payload,
  rows: TableRows,
  scratch: string,
  escapeFormulae: boolean,
): Promise<{ table: TableName; format: TableFormat; path: string }[]> {
  await mkdir(join(scratch, TABLES_DIR), { recursive: true });
  const writers = await createTableWriters(new LocalStorage(join(scratch, TABLES_DIR)), {
    formats: tableFormats.map((format) => format.name as TableFormat),
    csv: { bom: false, escape_formulae: escapeFormulae },
    tables: tableNames,
  });
  try {
    for (const table of tableNames) await writers.write(table, rows[table] as Row<typeof table>[]);
  } catch (error) {
    await writers.abort();
    throw error;
  }
  const added: { table: TableName; format: TableFormat; path: string }[] = [];
  for (const { table, files } of await writers.close())
    for (const file of files) {
      const path = `${TABLES_DIR}/${file}`;
      await payload.add(await diskFile(`data/${path}`, join(scratch, path)));
      added.push({ table, format: tableFormatOfFile(table, file), path });
    }
  return added;
}

/** A wide sheet's header row and whether it starts with a byte order mark, from its first bytes. */
export async function sheetHeader(
  storage: Storage,
  path: string,
  size: number,
): Promise<{ header: string[]; bom: boolean }> {
  const chunks: Buffer[] = [];
  for await (const chunk of await storage.readStream(path, { start: 0, end: Math.min(size, 1 << 20) }))
    chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  const bom = text.startsWith('\ufeff');
  const header = Papa.parse<string[]>(bom ? text.slice(1) : text, { preview: 1 }).data[0] ?? [];
  return { header: header.map(String), bom };
}
