/**
 * The one place handoffs are de-identified. share, archive and qdpx (and any handoff added
 * later) read a study through `openHandoff(output, profile)`: with a privacy profile, its rows,
 * texts and recordings come out already de-identified (src/privacy), so a command has no privacy
 * code of its own, and the same study gives the same pseudonyms and tags whichever command
 * packs it. `'identified'` (--identified) and `'unprofiled'` (a pipeline file without a
 * privacy: section) read the output as it is, and the package says which.
 */

import { heldResponses } from '../ledger/index.ts';
import type { ZipEntry, ZipIndex } from '../output/codecs/zip-index.ts';
import {
  type HandoffPrivacy,
  type LinkageEntry,
  type PrivacyProfile,
  profileStatement,
  StudyDeidentifier,
  seenColumns,
} from '../privacy/index.ts';
import { type Row, type TableName, tableNames } from '../tables/index.ts';
import type { OutputReader, StudyReader } from './output.ts';
import type { Located, Recording } from './recordings.ts';
import type { RunReader } from './run.ts';

export type { HandoffPrivacy };

/**
 * A privacy profile; or the package keeps the respondents' identities: 'identified' because
 * --identified was given, 'unprofiled' because the pipeline file has no privacy: section.
 */
export type HandoffProfile = PrivacyProfile | 'identified' | 'unprofiled';

export interface HandoffStudy extends StudyReader {
  privacy: HandoffPrivacy;
  /**
   * Every pseudonym of the study and what it stands for (for --linkage; none when identified):
   * its ids and attributes read again, once.
   */
  linkage(): Promise<LinkageEntry[]>;
  /** The responses a package holds, from their ids as it holds them, for the ledger (handoffs/). */
  held(ids: readonly string[]): Promise<{ id: string; pseudonym?: string }[]>;
  /** A run's raw payloads of the study may go into a package only when it is identified. */
  rawFiles(run: RunReader): ReturnType<RunReader['rawFiles']>;
}

export class HandoffReader {
  constructor(
    readonly output: OutputReader,
    readonly profile: HandoffProfile,
  ) {}

  get identified(): boolean {
    return typeof this.profile === 'string';
  }

  /** A study of current/ by permanent id or link_id, as the package will carry it. */
  async study(idOrLinkId: string): Promise<HandoffStudy> {
    const source = await this.output.study(idOrLinkId);
    if (typeof this.profile === 'string')
      return {
        ...source,
        privacy: {
          identified: true,
          because: this.profile === 'identified' ? '--identified' : 'no privacy profile',
        },
        linkage: async () => [],
        held: async (ids) => heldResponses(ids, []),
        rawFiles: (run) => run.rawFiles(),
      };
    const study = new StudyDeidentifier(this.profile);
    // Every table with a text to tag, or what the package says it did (ids, URL parameters):
    // only those columns read.
    for (const table of tableNames) {
      const columns = seenColumns[table] as readonly (keyof Row<typeof table> & string)[];
      if (columns.length > 0) for await (const group of source.rows(table, columns)) study.see(table, group);
    }
    const excluded = this.profile.config.recordings === 'exclude';
    if (excluded)
      for await (const group of source.rows('media', ['response_id']))
        study.recordingsExcluded += group.length;
    const rows = <T extends TableName>(table: T, columns?: readonly (keyof Row<T> & string)[]) =>
      deidentified(source.rows(table, columns), table, study);
    // Read at most once, for the ledger and --linkage both.
    let responseIds: Promise<string[]> | null = null;
    const idsOnce = () => {
      responseIds ??= responseIdsOf(source);
      return responseIds;
    };
    let linkage: Promise<LinkageEntry[]> | null = null;
    return {
      study: study.row('studies', source.study) as Row<'studies'>,
      rows,
      async all<T extends TableName>(table: T) {
        const list: Row<T>[] = [];
        for await (const group of rows(table)) list.push(...group);
        return list;
      },
      recordings: () => (excluded ? none() : deidentifiedRecordings(source.recordings(), study)),
      privacy: { identified: false, profile: profileStatement(this.profile), counts: study.counts() },
      linkage: () => {
        linkage ??= linkageOf(source, study, idsOnce());
        return linkage;
      },
      // Only the responses' pseudonyms: the attributes' lines are --linkage's alone.
      held: async (ids) => heldResponses(ids, study.linkage(await idsOnce(), [])),
      rawFiles: () => [],
    };
  }
}

/** The reader every handoff command reads an output through. */
export function openHandoff(output: OutputReader, profile: HandoffProfile): HandoffReader {
  return new HandoffReader(output, profile);
}

/** The study's linkage, from its response ids and attributes as current/ holds them. */
async function linkageOf(
  source: StudyReader,
  study: StudyDeidentifier,
  responseIds: Promise<string[]>,
): Promise<LinkageEntry[]> {
  const attributes: LinkageEntry[] = [];
  for await (const group of source.rows('attributes', ['response_id', 'key', 'value']))
    for (const row of group) {
      const entry = study.attributeLinkage(row);
      if (entry) attributes.push(entry);
    }
  return study.linkage(await responseIds, attributes);
}

async function responseIdsOf(source: StudyReader): Promise<string[]> {
  const ids: string[] = [];
  for await (const group of source.rows('responses', ['response_id']))
    for (const row of group) ids.push(row.response_id);
  return ids;
}

async function* deidentified<T extends TableName>(
  groups: AsyncIterable<Row<T>[]>,
  table: T,
  study: StudyDeidentifier,
): AsyncIterable<Row<T>[]> {
  for await (const group of groups) {
    const out: Row<T>[] = [];
    for (const row of group) {
      const kept = study.row(table, row);
      if (kept) out.push(kept);
    }
    yield out;
  }
}

/** Recordings under their pseudonyms: their rows, notes and the media.zip names they are read by. */
async function* deidentifiedRecordings(
  groups: AsyncIterable<Recording[]>,
  study: StudyDeidentifier,
): AsyncIterable<Recording[]> {
  const zips = new Map<ZipIndex, ZipIndex>();
  const renamed = (zip: ZipIndex) => {
    let view = zips.get(zip);
    if (!view) {
      view = zip.renamed((name) => study.renamedMediaPath(name));
      zips.set(zip, view);
    }
    return view;
  };
  for await (const group of groups)
    yield group.map((recording): Recording => {
      const { located } = recording;
      const id = recording.response_id;
      let where: Located;
      if ('reason' in located) where = { reason: study.mentionsOf(located.reason, id) };
      else {
        const zip = renamed(located.zip);
        const entry = zip.entries.get(study.renamedMediaPath(located.entry.name)) as ZipEntry;
        where = { ...located, zip, entry, row: study.row('media', located.row) as Row<'media'> };
      }
      return {
        ...recording,
        response_id: study.responseId(id),
        row: recording.row && study.row('media', recording.row),
        located: where,
        note: recording.note && study.mentionsOf(recording.note, id),
      };
    });
}

async function* none(): AsyncIterable<Recording[]> {}
