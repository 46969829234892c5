/**
 * The run's rows again, per study, for the current dataset: while the run writes its tables,
 * each study's rows are also appended to JSON-lines files in a local temporary folder (one per
 * study and table; the small tables' rows are held in memory), read back once the study's
 * bucket is prepared and merged into its parts. Also
 * kept: the responses whose copy is incomplete (no detail), which must not replace a previous
 * copy. The folder is in the run's scratch space (util/scratch.ts); nothing reads it after the
 * run: the parts made from it are published before the run is committed.
 */
import { createReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { TableWriters } from '../output/table-writers.ts';
import { openLocalFile } from '../storage/local-file.ts';
import type { OutputFile } from '../storage/types.ts';
import type { Row, TableName } from '../tables/index.ts';

export interface StudyStage {
  write<T extends TableName>(table: T, rows: readonly Row<T>[]): Promise<void>;
  markIncomplete(responseId: string): void;
  /** Flushes the study's files; call when the study is exported. */
  close(): Promise<void>;
}

interface StudyFiles {
  /** Its files are <prefix>-<table>.jsonl, side by side in the staging folder: no folder each. */
  prefix: string;
  /** The tables staged; their files stay open only until the study is closed. */
  tables: Set<TableName>;
  sinks: Map<TableName, { sink: Promise<OutputFile>; queue: Promise<void> }>;
  /** The rows of the small tables (heldTables), kept in memory. */
  held: Map<TableName, Row<TableName>[]>;
  incomplete: Set<string>;
  closed: Promise<void> | null;
}

export class CurrentStaging {
  readonly #studies = new Map<string, StudyFiles>();

  private constructor(readonly dir: string) {}

  /** `dir`: a folder of the run's scratch space, which is removed however the process ends. */
  static async open(dir: string): Promise<CurrentStaging> {
    await mkdir(dir, { recursive: true });
    return new CurrentStaging(dir);
  }

  /** The permanent ids of the studies staged, in the order they were first staged. */
  studyIds(): string[] {
    return [...this.#studies.keys()];
  }

  forStudy(studyId: string): StudyStage {
    let files = this.#studies.get(studyId);
    if (!files) {
      files = {
        prefix: join(this.dir, String(this.#studies.size)),
        tables: new Set(),
        sinks: new Map(),
        held: new Map(),
        incomplete: new Set(),
        closed: null,
      };
      this.#studies.set(studyId, files);
    }
    const study = files;
    return {
      write(table, rows) {
        if (rows.length === 0) return Promise.resolve();
        if (heldTables.has(table)) {
          study.tables.add(table);
          const held = study.held.get(table) ?? [];
          held.push(...(rows as readonly Row<TableName>[]));
          study.held.set(table, held);
          return Promise.resolve();
        }
        const entry = sinkOf(study, table);
        const text = rows.map((row) => `${JSON.stringify(row)}\n`).join('');
        entry.queue = entry.queue.then(async () => (await entry.sink).write(text));
        return entry.queue;
      },
      markIncomplete(responseId) {
        study.incomplete.add(responseId);
      },
      close() {
        study.closed ??= closeAll(study);
        return study.closed;
      },
    };
  }

  incompleteOf(studyId: string): ReadonlySet<string> {
    return this.#studies.get(studyId)?.incomplete ?? new Set();
  }

  /** The staged rows of one study's table, in the order they were written. */
  async *rows<T extends TableName>(studyId: string, table: T): AsyncIterable<Row<T>> {
    const study = this.#studies.get(studyId);
    if (!study?.tables.has(table)) return;
    const held = study.held.get(table);
    if (held) {
      yield* held as Row<T>[];
      return;
    }
    await this.forStudy(studyId).close();
    const lines = createInterface({
      input: createReadStream(pathOf(study, table), 'utf8'),
      crlfDelay: Infinity,
    });
    for await (const line of lines) if (line !== '') yield JSON.parse(line) as Row<T>;
  }

  async remove(): Promise<void> {
    for (const study of this.#studies.values()) {
      await Promise.allSettled([...study.sinks.values()].map(async (entry) => (await entry.sink).abort()));
    }
    await rm(this.dir, { recursive: true, force: true });
  }
}

/**
 * The run's writers, with the rows of one study also staged for the current dataset, but for
 * the tables in `copied` (its parts take the run's own bytes: StudyCopy).
 */
export function stagingWriters(
  writers: TableWriters,
  stage: StudyStage,
  copied: ReadonlySet<TableName> = new Set(),
): TableWriters {
  return {
    async write(table, rows) {
      await writers.write(table, rows);
      if (!copied.has(table)) await stage.write(table, rows);
    },
    copyStudy: (studyId, copy, group) => writers.copyStudy(studyId, copy, group),
    endStudy: (studyId, options) => writers.endStudy(studyId, options),
    close: () => writers.close(),
    abort: () => writers.abort(),
  };
}

/**
 * Tables of a few rows per study (its study row, its question slots), held in memory: a file
 * each would cost a run of many small studies two files opened, written and read per study.
 */
const heldTables: ReadonlySet<TableName> = new Set(['studies', 'questions']);

function pathOf(study: StudyFiles, table: TableName): string {
  return `${study.prefix}-${table}.jsonl`;
}

function sinkOf(study: StudyFiles, table: TableName) {
  let entry = study.sinks.get(table);
  if (!entry) {
    const sink = openLocalFile(pathOf(study, table));
    entry = { sink, queue: sink.then(() => undefined) };
    study.sinks.set(table, entry);
    study.tables.add(table);
  }
  return entry;
}

/** Closes the study's files and lets go of them: a run of many studies holds none it is done with. */
async function closeAll(study: StudyFiles): Promise<void> {
  for (const entry of study.sinks.values()) {
    await entry.queue;
    await (await entry.sink).close();
  }
  study.sinks.clear();
}
