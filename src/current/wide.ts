/**
 * The current wide sheet of a study, current/wide/study_id=<id>/<link_id>.csv: one row per
 * response of the study's current parts, one column per question slot, built from the merged
 * questions, responses and answers parts just written (so it always agrees with them).
 *
 * Answers have to be grouped by response. A study whose answers part is small is grouped in
 * memory in the order of its responses part; a bigger one is first split into buckets by a
 * hash of response_id (local JSON-lines files), then each bucket is grouped on its own, so
 * memory stays bounded by a bucket whatever the size of the study. The rows then go through
 * a sorted spill (load/wide.ts), so the sheet follows response_number as a run's does.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { type CsvOptions, createCsvWriter } from '../load/csv.ts';
import type { Row } from '../load/tables.ts';
import { safeFileName, wideRecord, wideRowSpill } from '../load/wide.ts';
import { type WideRow, wideFixedColumns } from '../records.ts';
import { openLocalFile } from '../storage/local-file.ts';
import type { OutputFile } from '../storage/types.ts';
import { questionKey } from '../transform/questions.ts';
import { wideColumns } from '../transform/wide.ts';
import { CURRENT_DIR, partitionName, readPart } from './parts.ts';
import type { CurrentStore } from './store.ts';

/** Parquet bytes of answers per bucket: a few MB of compressed text stays well under 100 MB in memory. */
export const BUCKET_PARQUET_BYTES = 4 * 2 ** 20;

export interface PartRef {
  path: string;
  bytes: number;
}

export interface CurrentWideInput {
  store: CurrentStore;
  studyId: string;
  linkId: string;
  questions: readonly Row<'questions'>[];
  responses: PartRef;
  answers: PartRef;
  csv: CsvOptions;
  scratchDir: string;
  /** Rows per bucket; for tests. */
  bucketBytes?: number;
}

export function wideFolder(studyId: string): string {
  return `${CURRENT_DIR}/wide/${partitionName(studyId)}`;
}

/** Writes the sheet and removes any other file of the folder (a sheet under an older link_id). */
export async function writeCurrentWide(input: CurrentWideInput): Promise<string> {
  const dir = await mkdtemp(join(input.scratchDir, 'wide-'));
  const folder = wideFolder(input.studyId);
  const target = `${folder}/${safeFileName(input.linkId)}.csv`;
  try {
    const columns = wideColumns(input.questions);
    // Written straight into the store: the sheet is visible only once it is closed whole.
    const csv = await createCsvWriter(
      input.store,
      target,
      [...wideFixedColumns, ...columns.map((c) => c.header)],
      input.csv,
    );
    try {
      const bucketCount = Math.max(
        1,
        Math.ceil(input.answers.bytes / (input.bucketBytes ?? BUCKET_PARQUET_BYTES)),
      );
      const sorted = wideRowSpill(dir, 'sorted');
      for await (const rows of wideRows(input, bucketCount, dir)) {
        for (const row of rows) await sorted.add(row);
      }
      let batch: WideRow[] = [];
      for await (const row of sorted.sorted()) {
        batch.push(row);
        if (batch.length >= 1000) {
          await csv.write(batch.map((one) => wideRecord(one, columns)));
          batch = [];
        }
      }
      await csv.write(batch.map((one) => wideRecord(one, columns)));
      await csv.close();
    } catch (error) {
      await csv.abort();
      throw error;
    }
    for await (const file of input.store.list(folder)) {
      if (`${folder}/${file.path}` !== target) await input.store.delete(`${folder}/${file.path}`);
    }
    return target;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

type Fixed = Omit<WideRow, 'cells'>;

function fixedOf(row: Row<'responses'>): Fixed {
  return {
    response_id: row.response_id,
    response_number: row.response_number,
    created_at: row.created_at,
    updated_at: row.updated_at,
    summary: row.summary,
  };
}

function addCell(cells: Record<string, string>, answer: Row<'answers'>): void {
  // Answers without a discussion guide question id came from the answers object: their slot is the key.
  const key = questionKey(answer.discussion_guide_question_id ?? answer.answer_id, answer.concept_id);
  cells[key] = key in cells ? `${cells[key]}\n${answer.answer}` : answer.answer;
}

async function* wideRows(
  input: CurrentWideInput,
  bucketCount: number,
  dir: string,
): AsyncIterable<WideRow[]> {
  const { store } = input;
  if (bucketCount === 1) {
    const cells = new Map<string, Record<string, string>>();
    for await (const rows of readPart(store, input.answers.path, input.answers.bytes, 'answers')) {
      for (const answer of rows) {
        let own = cells.get(answer.response_id);
        if (!own) {
          own = {};
          cells.set(answer.response_id, own);
        }
        addCell(own, answer);
      }
    }
    for await (const rows of readPart(store, input.responses.path, input.responses.bytes, 'responses')) {
      yield rows.map((row) => ({ ...fixedOf(row), cells: cells.get(row.response_id) ?? {} }));
    }
    return;
  }
  const bucketOf = (id: string) => createHash('sha256').update(id).digest().readUInt32BE(0) % bucketCount;
  const answersAt = (n: number) => join(dir, `answers-${n}.jsonl`);
  const responsesAt = (n: number) => join(dir, `responses-${n}.jsonl`);
  await spill(
    readPart(store, input.answers.path, input.answers.bytes, 'answers'),
    bucketCount,
    answersAt,
    (row) => bucketOf(row.response_id),
  );
  await spill(
    readPart(store, input.responses.path, input.responses.bytes, 'responses'),
    bucketCount,
    responsesAt,
    (row) => bucketOf(row.response_id),
  );
  for (let n = 0; n < bucketCount; n++) {
    const cells = new Map<string, Record<string, string>>();
    for await (const answer of lines<Row<'answers'>>(answersAt(n))) {
      let own = cells.get(answer.response_id);
      if (!own) {
        own = {};
        cells.set(answer.response_id, own);
      }
      addCell(own, answer);
    }
    let batch: WideRow[] = [];
    for await (const row of lines<Row<'responses'>>(responsesAt(n))) {
      batch.push({ ...fixedOf(row), cells: cells.get(row.response_id) ?? {} });
      if (batch.length >= 1000) {
        yield batch;
        batch = [];
      }
    }
    yield batch;
  }
}

async function spill<T>(
  source: AsyncIterable<T[]>,
  count: number,
  pathOf: (n: number) => string,
  bucketOf: (row: T) => number,
): Promise<void> {
  const sinks = await Promise.all(Array.from({ length: count }, (_, n) => openLocalFile(pathOf(n))));
  try {
    for await (const rows of source) {
      for (const row of rows) await (sinks[bucketOf(row)] as OutputFile).write(`${JSON.stringify(row)}\n`);
    }
    for (const sink of sinks) await sink.close();
  } catch (error) {
    for (const sink of sinks) await sink.abort();
    throw error;
  }
}

async function* lines<T>(path: string): AsyncIterable<T> {
  const reader = createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Infinity });
  for await (const line of reader) if (line !== '') yield JSON.parse(line) as T;
}
