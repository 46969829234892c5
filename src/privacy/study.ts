/**
 * One study's rows de-identified by a profile: response and answer ids pseudonymised (and the
 * media paths built from them), URL parameters kept, dropped or pseudonymised by their key's
 * rule, every free text's personal data replaced by its tag, fields the service sent beyond its
 * specification (`extra`) left out. Every text of the study is seen first (`see`), so its tags
 * are numbered before any row is handed on. Nothing is kept per response: the linkage is made
 * from the study's ids and attributes read again (`linkage`), and pseudonyms are computed as
 * rows come (a table's rows come response by response, so the few most recent are kept). Pure.
 */
import { idOf, nameOf } from '../names.ts';
import type { Row, TableName } from '../tables/index.ts';
import { attributeRule, type PrivacyProfile } from './profile.ts';
import { pseudonymOf } from './pseudonym.ts';
import { type KindCounts, StudyTags } from './tags.ts';

/** Every column of free text, declared once: what the tags replace and what verify reads. */
export const textColumns: { readonly [T in TableName]: readonly (keyof Row<T> & string)[] } = {
  studies: ['title', 'desc'],
  responses: ['summary', 'short_transcript'],
  questions: ['question'],
  answers: ['question', 'answer'],
  transcript: ['moderator', 'user'],
  attributes: [],
  media: [],
  deletions: [],
};

/**
 * The columns the first pass (`see`) reads of each table: its texts, and what the package's
 * counts and linkage name (response ids, URL parameters); a table with none is not read.
 */
export const seenColumns: { readonly [T in TableName]: readonly (keyof Row<T> & string)[] } = {
  ...textColumns,
  responses: [...textColumns.responses, 'response_id'],
  attributes: ['response_id', 'key', 'value'],
};

/** Per study, what the profile did: never an original value. */
export interface StudyPrivacyCounts {
  /** Responses whose id was pseudonymised (0 with ids: keep). */
  response_ids: number;
  attributes: { kept: number; dropped: number; pseudonymised: number };
  /** Replacements in the study's texts, by kind, each occurrence once. */
  text: KindCounts;
  /** Distinct things tagged, by kind (the highest number of each kind's tags). */
  distinct: KindCounts;
  /** Recordings left out (recordings: exclude). */
  recordings_excluded: number;
}

/** One line of a linkage file: a pseudonym and what it stands for. */
export interface LinkageEntry {
  kind: 'response' | 'attribute';
  pseudonym: string;
  response_id: string;
  key: string | null;
  value: string | null;
}

/** Response pseudonyms kept for the rows that follow: a table's rows of a response come together. */
const recentPseudonyms = 1024;

export class StudyDeidentifier {
  readonly tags: StudyTags;
  #responses = 0;
  readonly #attributes = { kept: 0, dropped: 0, pseudonymised: 0 };
  readonly #pseudonyms = new Map<string, string>();
  recordingsExcluded = 0;

  constructor(readonly profile: PrivacyProfile) {
    this.tags = new StudyTags(profile.secret, profile.detectors);
  }

  /** First pass: a group of the study's rows (every table once, before any row is handed on). */
  see<T extends TableName>(table: T, rows: readonly Row<T>[]): void {
    const columns = textColumns[table] as readonly string[];
    for (const row of rows) {
      const cells = row as Record<string, unknown>;
      for (const column of columns) this.tags.see(cells[column] as string | null);
      // current/ holds a response once.
      if (table === 'responses') this.#responses += 1;
      if (table === 'attributes') {
        const rule = attributeRule(this.profile, (row as Row<'attributes'>).key);
        this.#attributes[rule === 'keep' ? 'kept' : rule === 'drop' ? 'dropped' : 'pseudonymised'] += 1;
      }
    }
  }

  /** The response id as the package carries it (each response's pseudonym computed once). */
  responseId(id: string): string {
    if (this.profile.config.ids === 'keep') return id;
    let pseudonym = this.#pseudonyms.get(id);
    if (pseudonym === undefined) {
      pseudonym = pseudonymOf(this.profile.secret, { kind: 'response', id });
      if (this.#pseudonyms.size >= recentPseudonyms) this.#pseudonyms.clear();
      this.#pseudonyms.set(id, pseudonym);
    }
    return pseudonym;
  }

  /** A row as the package carries it; null when the profile drops it (a URL parameter). */
  row<T extends TableName>(table: T, row: Row<T>): Row<T> | null {
    const out = { ...row } as Record<string, unknown>;
    for (const column of textColumns[table] as readonly string[])
      out[column] = this.tags.replace(out[column] as string | null);
    if ('extra' in out) out.extra = null;
    if (table === 'studies') return out as Row<T>;
    const responseId = out.response_id as string;
    if (table === 'attributes') {
      const attribute = row as Row<'attributes'>;
      const rule = attributeRule(this.profile, attribute.key);
      if (rule === 'drop') return null;
      if (rule === 'pseudonymise') out.value = this.attributeValue(attribute);
    }
    if (this.profile.config.ids === 'keep' || table === 'questions') return out as Row<T>;
    out.response_id = this.responseId(responseId);
    if (typeof out.answer_id === 'string')
      out.answer_id = pseudonymOf(this.profile.secret, {
        kind: 'answer',
        response_id: responseId,
        id: out.answer_id,
      });
    for (const column of ['file', 'audio_file', 'video_file'])
      if (typeof out[column] === 'string') out[column] = this.mediaPath(out[column] as string, responseId);
    return out as Row<T>;
  }

  /** A media path `<link_id>/<response_id>/…` with the response's folder named by its pseudonym. */
  mediaPath(path: string, responseId: string): string {
    if (this.profile.config.ids === 'keep') return path;
    const parts = path.split('/');
    if (parts[1] === nameOf(responseId)) parts[1] = nameOf(this.responseId(responseId));
    return parts.join('/');
  }

  /** Any media path `<link_id>/<response_id>/…` with its response's folder named by its pseudonym. */
  renamedMediaPath(path: string): string {
    const parts = path.split('/');
    if (this.profile.config.ids === 'keep' || parts.length < 3 || parts[1] === undefined) return path;
    parts[1] = nameOf(this.responseId(idOf(parts[1])));
    return parts.join('/');
  }

  /** A message about a response (a recording's note) with its id, and its name in paths, pseudonymised. */
  mentionsOf(message: string, responseId: string): string {
    if (this.profile.config.ids === 'keep') return message;
    const pseudonym = this.responseId(responseId);
    return message.replaceAll(nameOf(responseId), nameOf(pseudonym)).replaceAll(responseId, pseudonym);
  }

  counts(): StudyPrivacyCounts {
    return {
      response_ids: this.profile.config.ids === 'keep' ? 0 : this.#responses,
      attributes: { ...this.#attributes },
      text: { ...this.tags.occurrences },
      distinct: this.tags.distinct(),
      recordings_excluded: this.recordingsExcluded,
    };
  }

  /** An attribute's line of the linkage when the profile pseudonymises it; null otherwise. */
  attributeLinkage(attribute: Pick<Row<'attributes'>, 'response_id' | 'key' | 'value'>): LinkageEntry | null {
    if (attributeRule(this.profile, attribute.key) !== 'pseudonymise') return null;
    return {
      kind: 'attribute',
      pseudonym: this.attributeValue(attribute),
      response_id: attribute.response_id,
      key: attribute.key,
      value: attribute.value,
    };
  }

  /**
   * Every pseudonym of the study and what it stands for, for the data controller, never a
   * package: from the study's response ids and its attributes' lines (`attributeLinkage`).
   */
  linkage(responseIds: readonly string[], attributes: readonly LinkageEntry[]): LinkageEntry[] {
    const responses: LinkageEntry[] =
      this.profile.config.ids === 'keep'
        ? []
        : [...responseIds].sort().map((id) => ({
            kind: 'response',
            pseudonym: this.responseId(id),
            response_id: id,
            key: null,
            value: null,
          }));
    const sorted = [...attributes].sort(
      (a, b) =>
        (a.response_id < b.response_id ? -1 : a.response_id > b.response_id ? 1 : 0) ||
        ((a.key ?? '') < (b.key ?? '') ? -1 : 1),
    );
    return [...responses, ...sorted];
  }

  private attributeValue(attribute: Pick<Row<'attributes'>, 'key' | 'value'>): string {
    return pseudonymOf(this.profile.secret, {
      kind: 'attribute',
      key: attribute.key,
      value: attribute.value,
    });
  }
}
