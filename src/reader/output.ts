/**
 * An output (out/<name> or s3://bucket/prefix/<name>) read, never written: its committed
 * runs, the `latest` pointers, current/ by study, and each study's recordings wherever a run
 * archived them. Every byte goes through the storage seam, so a folder and a bucket read alike.
 */
import { ConfigError } from '../errors.ts';
import {
  CURRENT_DIR,
  PENDING_DIR,
  parseShardLabel,
  pendingRunId,
  RUNS_DIR,
  runPath,
  shardLabelOfRun,
  shardNames,
} from '../output/layout.ts';
import { runFolder, runIdsListed } from '../output/manifest.ts';
import { compareRunIds } from '../run-id.ts';
import { openStorage, type S3Settings } from '../storage/index.ts';
import type { Storage } from '../storage/types.ts';
import type { Row, TableName } from '../tables/index.ts';
import { byResponse } from './by-response.ts';
import { type CurrentFile, CurrentReader } from './current.ts';
import { type Recording, RecordingFinder } from './recordings.ts';
import { openRun, type RunReader } from './run.ts';

export interface LatestPointer {
  /** `latest`, or `latest-shard-K-of-N` for a shard. */
  pointer: string;
  runId: string;
}

export interface StudyReader {
  study: Row<'studies'>;
  /**
   * current/'s rows of the study, a row group at a time; `columns`: only these read (the
   * others null), for a pass that needs a few.
   */
  rows<T extends TableName>(table: T, columns?: readonly (keyof Row<T> & string)[]): AsyncIterable<Row<T>[]>;
  /** current/'s rows of the study, all in memory. */
  all<T extends TableName>(table: T): Promise<Row<T>[]>;
  /** Every recording of the study, response by response (turn, then kind, order). */
  recordings(): AsyncIterable<Recording[]>;
}

export class OutputReader {
  readonly current: CurrentReader;
  #runs: Promise<RunReader[]> | null = null;
  #finder: RecordingFinder | null = null;

  private constructor(
    /** Rooted at the output. */
    readonly storage: Storage,
  ) {
    this.current = new CurrentReader(storage);
  }

  static async open(location: string, s3: S3Settings = {}): Promise<OutputReader> {
    return new OutputReader(await openStorage(location, s3));
  }

  get location(): string {
    return this.storage.location;
  }

  /** The output's name: its folder's (the pipeline's name). */
  get name(): string {
    return this.location.replace(/\/+$/, '').split('/').at(-1) ?? '';
  }

  /** Run folders whose manifest is written, newest first (read once). */
  runs(): Promise<RunReader[]> {
    this.#runs ??= (async () => {
      const ids = (await runIdsListed(this.storage)).sort((a, b) => compareRunIds(b, a));
      const runs = await Promise.all(ids.map((id) => this.run(id)));
      return runs.filter((run): run is RunReader => run !== null);
    })();
    this.#runs.catch(() => {
      this.#runs = null;
    });
    return this.#runs;
  }

  /** The run `id`, or null when runs/<id> holds no manifest (`runFolder`: an erasure's switch). */
  async run(id: string): Promise<RunReader | null> {
    return openRun(this.storage.at((await runFolder(this.storage, id)) ?? runPath(id)), id);
  }

  /** The runs `latest` (and each shard's latest-shard-K-of-N) name. */
  async latest(): Promise<LatestPointer[]> {
    const shards = new Set<string>();
    for (const id of await this.storage.listFolders(RUNS_DIR)) {
      const label = shardLabelOfRun(id);
      if (label) shards.add(label);
    }
    const pointers: LatestPointer[] = [];
    const labelled = [...shards].sort().flatMap((label) => {
      const shard = parseShardLabel(label);
      return shard ? [shardNames(shard).latest] : [];
    });
    for (const pointer of [shardNames(undefined).latest, ...labelled]) {
      const runId = (await this.storage.read(pointer))?.toString('utf8').trim();
      if (runId) pointers.push({ pointer, runId });
    }
    return pointers;
  }

  /** Runs committed but not yet finished publishing (the next run completes or undoes them). */
  async pendingRuns(): Promise<string[]> {
    const names: string[] = [];
    for await (const file of this.storage.list(PENDING_DIR)) {
      const runId = pendingRunId(file.path);
      if (runId !== null) names.push(runId);
    }
    return names.sort(compareRunIds);
  }

  /** Every study current/ holds, by link_id. */
  async studies(): Promise<Row<'studies'>[]> {
    const studies: Row<'studies'>[] = [];
    for await (const group of this.current.rows('studies')) studies.push(...group);
    return studies.sort((a, b) => a.link_id.localeCompare(b.link_id) || a.study_id.localeCompare(b.study_id));
  }

  /** A study of current/ by its permanent id, else by its link_id; a ConfigError naming the choices. */
  async resolveStudy(idOrLinkId: string): Promise<Row<'studies'>> {
    const studies = await this.studies();
    const byId = studies.find((study) => study.study_id === idOrLinkId);
    if (byId) return byId;
    const byLink = studies.filter((study) => study.link_id === idOrLinkId);
    if (byLink.length === 1) return byLink[0] as Row<'studies'>;
    const where = this.storage.describe(CURRENT_DIR);
    if (byLink.length > 1)
      throw new ConfigError(
        `${idOrLinkId}: the link_id of ${byLink.length} studies in ${where} (${byLink.map((s) => s.study_id).join(', ')}); give the permanent id`,
      );
    const known = studies.map((study) => `${study.link_id} (${study.study_id})`);
    throw new ConfigError(
      `${idOrLinkId}: no study in ${where} has this permanent id or link_id; it holds ${known.length === 0 ? 'none' : known.join(', ')}`,
    );
  }

  /** Finds recordings in this output's runs (one finder, its lookups cached). */
  async recordingFinder(): Promise<RecordingFinder> {
    this.#finder ??= new RecordingFinder(await this.runs(), this.storage.describe(RUNS_DIR));
    return this.#finder;
  }

  /** A study of current/, by permanent id or link_id. */
  async study(idOrLinkId: string): Promise<StudyReader> {
    const study = await this.resolveStudy(idOrLinkId);
    const id = study.study_id;
    // Each table's parts listed once: every read of the study reads the same files, even while a
    // run publishes (a handoff reads its texts twice, and tags only what it saw).
    const parts = new Map<TableName, Promise<CurrentFile[]>>();
    const partsOf = (table: TableName) => {
      let listed = parts.get(table);
      if (!listed) {
        listed = this.current.parts(table, id);
        parts.set(table, listed);
      }
      return listed;
    };
    const rows = <T extends TableName>(table: T, columns?: readonly (keyof Row<T> & string)[]) =>
      this.current.rowsIn(partsOf(table), table, id, columns);
    const all = async <T extends TableName>(table: T) => {
      const list: Row<T>[] = [];
      for await (const group of rows(table)) list.push(...group);
      return list;
    };
    const finder = await this.recordingFinder();
    return {
      study,
      rows,
      all,
      async *recordings() {
        const media = byResponse(await all('media'));
        // Of the transcript, only the turns that had a recording, and only what says so.
        const recorded: Pick<Row<'transcript'>, 'response_id' | 'turn' | 'has_audio' | 'has_video'>[] = [];
        for await (const group of rows('transcript'))
          for (const { response_id, turn, has_audio, has_video } of group)
            if (has_audio || has_video) recorded.push({ response_id, turn, has_audio, has_video });
        const transcript = byResponse(recorded);
        const responses: string[] = [];
        for await (const group of rows('responses')) for (const r of group) responses.push(r.response_id);
        responses.sort();
        for (const response of responses)
          yield await finder.recordingsOf(id, media.get(response) ?? [], transcript.get(response) ?? []);
      },
    };
  }
}
