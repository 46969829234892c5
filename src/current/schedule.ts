/**
 * When each bucket of the current dataset is prepared: as soon as the run's studies in it are
 * all exported, while the run still exports others (bucket.ts writes its new parts), a few at
 * once when they queue up. A bucket whose studies found nothing waits until the run is known
 * to be committed: a run where every study found nothing commits nothing (nothing-new.ts).
 */
import pLimit from 'p-limit';
import { bucketOf } from '../buckets.ts';
import type { StudyCopy } from '../output/formats/index.ts';
import type { Storage } from '../storage/types.ts';
import type { TableName } from '../tables/index.ts';
import { prepareBucket } from './bucket.ts';
import { type BucketStart, startBucket } from './bucket-start.ts';
import type { CurrentContext, CurrentStudy, PreparedBucket } from './context.ts';
import type { ResponseTable } from './merge.ts';

/**
 * Buckets prepared at once: one while preparation keeps up with the export (it then fills the
 * time the export waits on the service, and takes no CPU from its requests), up to four once
 * more buckets than that wait.
 */
const BUCKETS_PREPARED_AT_ONCE = 4;

/** What the run has of a bucket: its studies, and what its preparation starts from. */
interface BucketWork {
  bucket: number;
  /** The run's studies in the bucket; it is prepared once they are all exported. */
  expected: number;
  studies: CurrentStudy[];
  start: Promise<BucketStart> | null;
  /** The name of each study's run wide sheet, written again into the bucket's copies. */
  sheets: Map<string, string>;
  /** Its preparation (or, for a run that commits nothing, its abort) has taken it. */
  taken: boolean;
  /** Its studies whose export has ended (endsBucket). */
  ended: number;
}

/** Prepares each bucket as soon as the export of its studies is done, while the run still exports others. */
export class CurrentPreparation {
  readonly #queue = pLimit(1);
  readonly #prepared: Promise<PreparedBucket>[] = [];
  readonly #buckets = new Map<number, BucketWork>();
  /** Buckets whose studies found nothing, waiting (foundNothing); null once the run is sure to be committed. */
  #waiting: BucketWork[] | null = [];

  /** `studyIds`: every study the run exports (each is then begun and added once). */
  constructor(
    private readonly context: CurrentContext,
    studyIds: readonly string[],
  ) {
    for (const id of studyIds) this.#work(bucketOf(id)).expected += 1;
  }

  #work(bucket: number): BucketWork {
    let work = this.#buckets.get(bucket);
    if (!work) {
      work = { bucket, expected: 0, studies: [], start: null, sheets: new Map(), taken: false, ended: 0 };
      this.#buckets.set(bucket, work);
    }
    return work;
  }

  #start(work: BucketWork, copy: boolean): Promise<BucketStart> {
    work.start ??= startBucket(this.context, work.bucket, { copy });
    return work.start;
  }

  /**
   * Called before the study's first row is written to the run's tables. A bucket none of whose
   * response tables has a part yet (its first run, or the first since current/ was emptied)
   * gets parts that take the run's own bytes for those tables: returned is the copy to give
   * the run's writers (TableWriters.copyStudy), shared by the bucket's studies (`group`), the
   * tables it takes (they need no staging) and where the run's wide sheet
   * (wide/<sheetName>.csv) is written again. Else null.
   */
  async begin(
    studyId: string,
    sheetName: string,
  ): Promise<{
    tables: StudyCopy;
    group: string;
    copied: ReadonlySet<TableName>;
    wide: Storage;
  } | null> {
    const work = this.#work(bucketOf(studyId));
    const { copies, sheets } = await this.#start(work, true);
    if (!copies || !sheets) return null;
    work.sheets.set(studyId, sheetName);
    return {
      tables: {
        block: async (table, format, block) => copies.get(table as ResponseTable)?.block(format, block),
      },
      group: String(work.bucket),
      copied: new Set(copies.keys()),
      wide: sheets,
    };
  }

  /**
   * Called when the study's export ends, before its rows are flushed: whether it is the last
   * of its bucket's studies in the run to end (TableWriters.endStudy's `endsGroup`).
   */
  endsBucket(studyId: string): boolean {
    const work = this.#work(bucketOf(studyId));
    work.ended += 1;
    return work.ended >= work.expected;
  }

  add(study: CurrentStudy): void {
    const work = this.#work(bucketOf(study.study_id));
    work.studies.push(study);
    // A study that found something: the run will be committed, so the waiting ones are prepared.
    if (!foundNothing(study)) this.#prepareWaiting();
    if (work.studies.length < work.expected) return;
    if (this.#waiting !== null && work.studies.every(foundNothing)) {
      this.#waiting.push(work);
      return;
    }
    this.#prepare(work);
  }

  #prepare(work: BucketWork): void {
    // From here its preparation owns the bucket's copies (and aborts them if it fails).
    work.taken = true;
    const prepared = this.#queue(async () =>
      prepareBucket(this.context, work.studies, await this.#start(work, false), work.sheets),
    );
    this.#queue.concurrency =
      this.#queue.pendingCount >= BUCKETS_PREPARED_AT_ONCE ? BUCKETS_PREPARED_AT_ONCE : 1;
    // Reported by done(); the run fails there, before it is committed.
    prepared.catch(() => {});
    this.#prepared.push(prepared);
  }

  #prepareWaiting(): void {
    for (const work of this.#waiting ?? []) this.#prepare(work);
    this.#waiting = null;
  }

  /**
   * Every bucket, prepared; rejects with the first failure. `unchanged`: the run commits
   * nothing, so the buckets whose studies found nothing are left unprepared (their partitions
   * as listed, no parts), which is all that making a partition whole again needs (repairPrepared).
   */
  async done(options: { unchanged?: boolean } = {}): Promise<PreparedBucket[]> {
    if (!options.unchanged) this.#prepareWaiting();
    const waiting = this.#waiting ?? [];
    this.#waiting = null;
    // A bucket short of a study is one whose export failed; the others' rows still go in.
    for (const work of this.#buckets.values()) {
      if (!work.taken && work.studies.length > 0 && !waiting.includes(work)) this.#prepare(work);
    }
    const unprepared = await Promise.all(
      waiting.map(async (work): Promise<PreparedBucket> => {
        work.taken = true;
        const start = await this.#start(work, false);
        for (const copy of start.copies?.values() ?? []) await copy.abort();
        return {
          bucket: work.bucket,
          studyIds: work.studies.map((study) => study.study_id),
          parts: [],
          rewrite: new Set<TableName>(),
          partitions: start.partitions,
          wide: [],
        };
      }),
    );
    return [...(await Promise.all(this.#prepared)), ...unprepared];
  }

  /** Closes the copies of buckets never prepared: an export failed (the files are in scratch). */
  async discard(): Promise<void> {
    for (const work of this.#buckets.values()) {
      if (work.taken || !work.start) continue;
      const start = await work.start.catch(() => null);
      for (const copy of start?.copies?.values() ?? []) await copy.abort();
    }
  }
}

/**
 * A study whose export found nothing (an incremental listing with no response, nothing lost):
 * its bucket's preparation waits until the run is known to be committed, since a run where every
 * study is such a study commits nothing and needs none of its parts (nothing-new.ts).
 */
function foundNothing(study: CurrentStudy): boolean {
  return study.since !== null && study.lossless && study.responses === 0 && (study.removed?.size ?? 0) === 0;
}
