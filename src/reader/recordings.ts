/**
 * Where a recording's bytes are. A run's media rows point into its own media.zip. current/'s
 * rows are copies of the rows of the run that last exported the response, and name no run:
 * the runs are searched newest first (only those whose manifest says they exported the
 * study) for the one whose media table has the same row (response, turn, kind and sha256)
 * and whose media.zip holds the entry it names. A turn with a recording on the service but no
 * media row in current/ (its newest copy came from a run without media) is looked up the same
 * way, by key alone: the newest run that archived it; so is one whose newest download failed,
 * when an earlier run archived it (the recording is then that copy, with a note saying so).
 */

import type { ZipEntry, ZipIndex } from '../output/codecs/zip-index.ts';
import type { Row } from '../tables/index.ts';
import type { RunReader } from './run.ts';

export type MediaRow = Row<'media'>;

/** A recording found: the run whose media.zip holds it, the entry, and that run's media row. */
export interface Found {
  runId: string;
  zip: ZipIndex;
  entry: ZipEntry;
  row: MediaRow;
}

export type Located = Found | { reason: string };

export interface Recording {
  response_id: string;
  turn: number;
  kind: string;
  /** current/'s (or the run's) media row; null when current/ has none for the turn. */
  row: MediaRow | null;
  located: Located;
  /**
   * Set when the bytes found are an earlier run's copy: the newest export's download failed,
   * or current/ has no row for the turn; says which.
   */
  note: string | null;
}

type Key = `${string}\u0000${number}\u0000${string}`;

function keyOf(row: { response_id: string; turn: number; kind: string }): Key {
  return `${row.response_id}\u0000${row.turn}\u0000${row.kind}`;
}

export class RecordingFinder {
  readonly #rows = new Map<string, Promise<Map<Key, MediaRow>>>();

  /**
   * `runs`: newest first. `ownRun`: the rows asked about are this run's own (the viewer of a
   * run), so its media.zip is the only place to look and its rows need no comparing.
   */
  constructor(
    private readonly runs: readonly RunReader[],
    private readonly where: string,
    private readonly ownRun = false,
  ) {}

  /** Where `row`'s bytes are, or why there are none to read. */
  async locate(row: MediaRow): Promise<Located> {
    if (row.status !== 'archived' || !row.file)
      return { reason: `the download failed: ${row.error ?? 'no reason given'}` };
    if (this.runs.length === 0)
      return {
        reason: `current/ keeps no recordings of its own, and there is no run in ${this.where} (no runs/ folder beside it) whose media.zip could hold ${row.file}`,
      };
    for (const run of this.runs) {
      if (!this.ownRun && !exported(run, row.study_id)) continue;
      const zip = await run.media();
      const entry = zip?.entries.get(row.file);
      if (!zip || !entry) continue;
      if (this.ownRun) return { runId: run.id, zip, entry, row };
      const runRow = (await this.rowsOf(run, row.study_id)).get(keyOf(row));
      if (runRow?.status === 'archived' && runRow.file === row.file && sameBytes(runRow, row))
        return { runId: run.id, zip, entry, row: runRow };
    }
    return {
      reason: this.ownRun
        ? `${row.file} is not in ${this.where}'s media.zip`
        : `no run in ${this.where} holds ${row.file} (sha256 ${row.sha256 ?? 'not recorded'}) in its media.zip`,
    };
  }

  /** The newest archived copy of a (response, turn, kind) that current/ has no media row for. */
  async newestArchived(studyId: string, key: { response_id: string; turn: number; kind: string }) {
    for (const run of this.runs) {
      if (!exported(run, studyId)) continue;
      const runRow = (await this.rowsOf(run, studyId)).get(keyOf(key));
      if (runRow?.status !== 'archived' || !runRow.file) continue;
      const zip = await run.media();
      const entry = zip?.entries.get(runRow.file);
      if (zip && entry) return { runId: run.id, zip, entry, row: runRow } satisfies Found;
    }
    return null;
  }

  /**
   * Every recording of a response: each media row located, then each turn the transcript says
   * had a recording and no row names, from the newest run that archived it (or why none did).
   */
  async recordingsOf(
    studyId: string,
    media: readonly MediaRow[],
    transcript: readonly Pick<Row<'transcript'>, 'response_id' | 'turn' | 'has_audio' | 'has_video'>[],
  ): Promise<Recording[]> {
    const recordings: Recording[] = [];
    for (const row of media) {
      const located = await this.locate(row);
      const { response_id, turn, kind } = row;
      const earlier = 'reason' in located ? await this.newestArchived(studyId, row) : null;
      if ('reason' in located && earlier)
        recordings.push({
          response_id,
          turn,
          kind,
          row,
          located: earlier,
          note: earlierNote(earlier, located.reason),
        });
      else recordings.push({ response_id, turn, kind, row, located, note: null });
    }
    for (const turn of transcript) {
      const wanted: [boolean | null, string[]][] = [
        [turn.has_audio, ['audio']],
        [turn.has_video, ['video', 'hls']],
      ];
      for (const [had, kinds] of wanted) {
        if (!had || media.some((m) => m.turn === turn.turn && kinds.includes(m.kind))) continue;
        const found = await this.firstArchived(studyId, turn, kinds);
        const base = { response_id: turn.response_id, turn: turn.turn, row: null };
        recordings.push(
          found
            ? { ...base, kind: found.row.kind, located: found, note: earlierNote(found, noRowReason) }
            : { ...base, kind: kinds[0] as string, located: { reason: this.unarchived() }, note: null },
        );
      }
    }
    return recordings.sort((a, b) => a.turn - b.turn || a.kind.localeCompare(b.kind));
  }

  private unarchived(): string {
    return `the service had a recording for this turn and no run in ${this.where} archived it (media off, or not downloaded)`;
  }

  private async firstArchived(
    studyId: string,
    turn: { response_id: string; turn: number },
    kinds: readonly string[],
  ): Promise<Found | null> {
    for (const kind of kinds) {
      const found = await this.newestArchived(studyId, {
        response_id: turn.response_id,
        turn: turn.turn,
        kind,
      });
      if (found) return found;
    }
    return null;
  }

  /** A run's media rows of a study, read once. */
  private rowsOf(run: RunReader, studyId: string): Promise<Map<Key, MediaRow>> {
    const id = `${run.id}\u0000${studyId}`;
    let rows = this.#rows.get(id);
    if (!rows) {
      rows = (async () => {
        const byKey = new Map<Key, MediaRow>();
        for await (const group of run.rows('media', { studies: new Set([studyId]) }))
          for (const row of group) byKey.set(keyOf(row), row);
        return byKey;
      })();
      rows.catch(() => this.#rows.delete(id));
      this.#rows.set(id, rows);
    }
    return rows;
  }
}

const noRowReason = 'the newest copy of the response was exported without media';

function earlierNote(found: Found, why: string): string {
  return `${why}; this is the copy run ${found.runId} archived`;
}

/** Whether the run exported the study (a manifest without a studies list: maybe). */
function exported(run: RunReader, studyId: string): boolean {
  const studies = run.manifest.studies;
  return !Array.isArray(studies) || studies.some((study) => study.study_id === studyId);
}

/** The same bytes: by sha256 where both rows have one, else by size. */
function sameBytes(a: MediaRow, b: MediaRow): boolean {
  if (a.sha256 && b.sha256) return a.sha256 === b.sha256;
  return a.bytes === null || b.bytes === null || a.bytes === b.bytes;
}
