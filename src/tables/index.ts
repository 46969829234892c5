/**
 * The tables, declared once. Each declaration drives the CSV header order, the Parquet
 * schema, datapackage.json and the TypeScript row types (Row<'answers'> and so on).
 *
 * Value conventions in rows: timestamps are ISO 8601 UTC strings ("2026-11-21T23:55:00.000Z", or
 * "2026-11-21T23:55:00.000001Z" with microseconds: src/util/timestamp.ts),
 * integers are numbers, booleans are true or false, json columns hold JSON text, null is a
 * missing value.
 */

export type ColumnType = 'string' | 'integer' | 'boolean' | 'timestamp' | 'json';

export interface Column {
  readonly name: string;
  readonly type: ColumnType;
  /** May hold no value (null; an empty CSV cell). */
  readonly nullable: boolean;
  /**
   * Always present, but may be the empty string (text the service sends as ""). In CSV an
   * empty cell cannot tell "" from null, so datapackage.json does not mark these required.
   */
  readonly canBeEmpty: boolean;
  readonly description: string;
}

export interface ForeignKey {
  readonly fields: readonly string[];
  readonly reference: { readonly resource: string; readonly fields: readonly string[] };
}

export interface TableDeclaration {
  readonly name: string;
  readonly description: string;
  readonly columns: readonly Column[];
  readonly primaryKey: readonly string[];
  readonly foreignKeys: readonly ForeignKey[];
}

/** Always a value, never empty: ids, numbers, timestamps, enumerations. */
const required = <N extends string, T extends ColumnType>(name: N, type: T, description: string) =>
  ({ name, type, nullable: false, canBeEmpty: false, description }) as const;
/** Always a string, possibly empty: text from the service, whose schema allows "". */
const text = <N extends string>(name: N, description: string) =>
  ({ name, type: 'string', nullable: false, canBeEmpty: true, description }) as const;
const optional = <N extends string, T extends ColumnType>(name: N, type: T, description: string) =>
  ({ name, type, nullable: true, canBeEmpty: true, description }) as const;

const toResponses: ForeignKey = {
  fields: ['response_id'],
  reference: { resource: 'responses', fields: ['response_id'] },
};
const toStudies: ForeignKey = {
  fields: ['study_id'],
  reference: { resource: 'studies', fields: ['study_id'] },
};
const extra = optional(
  'extra',
  'json',
  'Fields the service sent beyond its specification, as a JSON object.',
);

export const tables = {
  studies: {
    name: 'studies',
    description: 'One row per study.',
    columns: [
      required('study_id', 'string', 'Permanent study id (uuid); never changes.'),
      required('link_id', 'string', 'Link id at export time; editable, so it can change between runs.'),
      text('title', 'Title of the study.'),
      required('created_at', 'timestamp', 'Creation time, UTC.'),
      text('desc', 'Description as sent, "<title> (<n> Responses)".'),
      optional('listed_response_count', 'integer', 'The <n> of desc, when desc has that shape.'),
      extra,
    ],
    primaryKey: ['study_id'],
    foreignKeys: [],
  },
  responses: {
    name: 'responses',
    description: 'One row per response.',
    columns: [
      required('response_id', 'string', 'Response id.'),
      required('study_id', 'string', 'Permanent id of the study.'),
      required('link_id', 'string', 'Link id of the study at export time.'),
      optional('response_number', 'integer', 'Ordered number of the response, when the service sent it.'),
      required('created_at', 'timestamp', 'Creation time, UTC.'),
      optional('updated_at', 'timestamp', 'Time of last update, UTC, when the service sent it.'),
      optional('summary', 'string', 'The Summary answer: a summary of the whole conversation.'),
      text('short_transcript', 'The transcript with shortened moderator messages.'),
      required('answer_count', 'integer', 'Number of rows this response has in answers.'),
      required('turn_count', 'integer', 'Number of rows this response has in transcript.'),
      required('modality', 'string', 'text, audio or video: which media the transcript carries.'),
      extra,
    ],
    primaryKey: ['response_id'],
    foreignKeys: [toStudies],
  },
  questions: {
    name: 'questions',
    description: 'One row per question slot of a study (a discussion guide question, per concept).',
    columns: [
      required('study_id', 'string', 'Permanent id of the study.'),
      text('discussion_guide_question_id', 'Discussion guide question id.'),
      optional('concept_id', 'string', 'Concept id; empty when the question is not concept-specific.'),
      text('question', 'Question text, as first seen.'),
      required('position', 'integer', 'Order of first appearance in the study, from 1.'),
    ],
    // The slot is (study_id, discussion_guide_question_id, concept_id), but concept_id is empty
    // for general questions and a key's columns must never be: the slot's position in its study
    // identifies it as well, and is always there.
    primaryKey: ['study_id', 'position'],
    foreignKeys: [toStudies],
  },
  answers: {
    name: 'answers',
    description: 'One row per answer of a response. Joins transcript on (response_id, answer_id).',
    columns: [
      required('response_id', 'string', 'Response id.'),
      required('answer_id', 'string', 'Answer id; equals answer_id on transcript rows.'),
      required('study_id', 'string', 'Permanent id of the study.'),
      optional('discussion_guide_question_id', 'string', 'Discussion guide question id.'),
      optional('concept_id', 'string', 'Concept id; empty when the question is not concept-specific.'),
      text('question', 'Question text.'),
      text('answer', 'Everything the user said for this question; may be empty.'),
      required('position', 'integer', 'Order of the answer within the response, from 1.'),
      extra,
    ],
    primaryKey: ['response_id', 'answer_id'],
    foreignKeys: [toResponses],
  },
  transcript: {
    name: 'transcript',
    description: 'One row per transcript row (turn) of a response.',
    columns: [
      required('response_id', 'string', 'Response id.'),
      required('turn', 'integer', 'Position of the row in the transcript, from 1.'),
      required('study_id', 'string', 'Permanent id of the study.'),
      optional('answer_id', 'string', 'Answer id; empty on rows that are not questions (intro messages).'),
      text('discussion_guide_question_id', 'Discussion guide question id.'),
      optional('concept_id', 'string', 'Concept id; empty when the question is not concept-specific.'),
      text('moderator', 'Message from the moderator.'),
      text('user', "The user's reply; may be empty."),
      optional(
        'audio_file',
        'string',
        "The audio's path inside media.zip; empty unless this run archived it.",
      ),
      optional(
        'video_file',
        'string',
        "The video's path inside media.zip; empty unless this run archived it.",
      ),
      // Nullable only for current/ rows merged from parts written before these columns existed.
      optional(
        'has_audio',
        'boolean',
        'Audio on the service for this turn, archived or not (empty: not known).',
      ),
      optional(
        'has_video',
        'boolean',
        'Video on the service for this turn, archived or not (empty: not known).',
      ),
      extra,
    ],
    primaryKey: ['response_id', 'turn'],
    foreignKeys: [toResponses],
  },
  attributes: {
    name: 'attributes',
    description: 'One row per URL query parameter passed to the study link for a response.',
    columns: [
      required('response_id', 'string', 'Response id.'),
      text('key', 'Parameter name.'),
      required('study_id', 'string', 'Permanent id of the study.'),
      text('value', 'Parameter value; may be empty.'),
    ],
    primaryKey: ['response_id', 'key'],
    foreignKeys: [toResponses],
  },
  media: {
    name: 'media',
    description: 'One row per media file of a transcript row, archived in media.zip or listed as failed.',
    columns: [
      required('response_id', 'string', 'Response id.'),
      required('turn', 'integer', 'Transcript turn the recording belongs to.'),
      required('kind', 'string', 'audio, video (MP4) or hls (playlist and segments).'),
      required('study_id', 'string', 'Permanent id of the study.'),
      optional('answer_id', 'string', 'Answer id of the transcript row, when it has one.'),
      optional('file', 'string', 'Path inside media.zip; empty when the download failed.'),
      optional('content_type', 'string', 'Content type the media host sent.'),
      optional('bytes', 'integer', 'Size in bytes.'),
      optional('sha256', 'string', 'SHA-256 of the bytes, hex.'),
      required('status', 'string', 'archived or failed.'),
      optional('error', 'string', 'Why the download failed.'),
    ],
    primaryKey: ['response_id', 'turn', 'kind'],
    foreignKeys: [toResponses],
  },
  deletions: {
    name: 'deletions',
    // Ids and times only, never content: it outlives the response it names.
    description: 'One row per response a reconcile took out of current/: the service no longer lists it.',
    columns: [
      required('response_id', 'string', 'Id of the response the service no longer lists.'),
      required('study_id', 'string', 'Permanent id of the study that held it.'),
      required('detected_at', 'timestamp', "When the run's listing found it missing, UTC."),
      required('run_id', 'string', 'The run that took it out of current/.'),
    ],
    primaryKey: ['response_id'],
    foreignKeys: [],
  },
} as const satisfies Record<string, TableDeclaration>;

/** Every table a run writes. */
export type TableName = keyof typeof tables;
export const runTableNames = Object.keys(tables) as TableName[];
/** What a run records about the service rather than takes from it: not in current/ (deletions). */
export type RecordTableName = 'deletions';
/** The tables of the service's data: a run's, and current/'s (one row per thing, newest copy). */
export type DataTableName = Exclude<TableName, RecordTableName>;
export const tableNames = runTableNames.filter((name): name is DataTableName => name !== 'deletions');

type ValueOf<C extends Column> =
  | (C['type'] extends 'integer' ? number : C['type'] extends 'boolean' ? boolean : string)
  | (C['nullable'] extends true ? null : never);

/** The row type of a table, derived from its declaration. */
export type Row<T extends TableName> = {
  [C in (typeof tables)[T]['columns'][number] as C['name']]: ValueOf<C>;
};

/** Column names in declaration order: the CSV header. */
export function columnNames(table: TableName): string[] {
  return tables[table].columns.map((column) => column.name);
}

/**
 * The wide sheet of a study (wide/<link_id>.csv and the workbook's wide sheet), declared once
 * as the tables are: its fixed columns, then one text column per question slot. Its headers
 * are for people: a timestamp's says UTC, since a spreadsheet shows the time without a zone.
 */
export const wideSheet = {
  name: 'wide',
  description:
    'One row per response of the study, in response_number order; one column per question slot, headed by the question text, holding the answer.',
  fixed: [
    { key: 'response_id', header: 'response_id', type: 'string', description: 'Response id.' },
    {
      key: 'response_number',
      header: 'response_number',
      type: 'integer',
      description: 'Ordered number of the response, when the service sent it.',
    },
    {
      key: 'created_at',
      header: 'created_at (UTC)',
      type: 'timestamp',
      description: 'Creation time, UTC (to the second; the tables keep milliseconds).',
    },
    {
      key: 'updated_at',
      header: 'updated_at (UTC)',
      type: 'timestamp',
      description: 'Time of last update, UTC (to the second), when the service sent it.',
    },
    {
      key: 'status',
      header: 'status',
      type: 'string',
      description:
        'complete, or in progress: the service sent no summary yet, its analysis of the response is still running.',
      codes: ['complete', 'in progress'],
    },
    {
      key: 'modality',
      header: 'modality',
      type: 'string',
      description: 'text, audio or video: which media the transcript carries (responses.modality).',
      codes: ['text', 'audio', 'video'],
    },
    {
      key: 'summary',
      header: 'summary',
      type: 'string',
      description: 'The Summary answer: a summary of the whole conversation.',
    },
  ],
  questionDescription: (question: string) =>
    `Answer to "${question}" (answers.answer; several answers to one slot are joined by line breaks).`,
  /**
   * After the question columns, one column per attribute key (a URL parameter of the study
   * link), headed by this prefix and the key, so that no key a respondent sends can take a
   * question's or a fixed column's name, nor start a header with a formula character.
   */
  attributePrefix: 'attribute: ',
  attributeDescription: (key: string) =>
    `The URL parameter "${key}" of the response's study link (attributes.value where attributes.key is "${key}"); empty when its link had none.`,
  /**
   * Keys are the respondents' (any parameter added to a link): a sheet takes the most frequent
   * ones, so a link per respondent with a parameter of its own cannot add a column per row.
   */
  maxAttributeColumns: 50,
} as const satisfies {
  name: string;
  description: string;
  /**
   * `codes`: the values a column takes, numbered from 1 in this order where a file holds codes
   * with value labels (the SPSS and Stata files); never renumbered, only added to.
   */
  fixed: readonly {
    key: string;
    header: string;
    type: ColumnType;
    description: string;
    codes?: readonly string[];
  }[];
  questionDescription: (question: string) => string;
  attributePrefix: string;
  attributeDescription: (key: string) => string;
  maxAttributeColumns: number;
};

/** The wide sheet's header: its fixed columns, then the question and attribute columns' headers. */
export function wideHeader(headers: readonly string[]): string[] {
  return [...wideSheet.fixed.map((column) => column.header), ...headers];
}

/** The attribute key a wide sheet's header names, or null for any other column. */
export function wideAttributeKey(header: string): string | null {
  return header.startsWith(wideSheet.attributePrefix) ? header.slice(wideSheet.attributePrefix.length) : null;
}

/** What a question or attribute column of a wide sheet holds, from its header. */
export function wideColumnDescription(header: string): string {
  const key = wideAttributeKey(header);
  return key === null ? wideSheet.questionDescription(header) : wideSheet.attributeDescription(key);
}

/** What the status column says of a response: the service sends its summary once it is analysed. */
export function responseStatus(summary: string | null): 'complete' | 'in progress' {
  return summary ? 'complete' : 'in progress';
}

/** Every data table's rows of one study (or any set of rows), by table. */
export type TableRows = { [T in DataTableName]: Row<T>[] };

/** Rows in key order: the same rows give the same files whatever order they were read in. */
export function sortByKey<T extends TableName>(table: T, rows: Row<T>[]): Row<T>[] {
  // Compared column by column in place: a sort makes n log n comparisons, so building each
  // row's key values there (keyOf) would allocate two arrays per comparison.
  const columns = tables[table].primaryKey as readonly string[];
  return rows.sort((a, b) => {
    for (const column of columns) {
      const order = compareValues(
        (a as Record<string, unknown>)[column],
        (b as Record<string, unknown>)[column],
      );
      if (order !== 0) return order;
    }
    return 0;
  });
}

/** A row's primary key values, in the order its table declares them. */
export type KeyValues = readonly unknown[];

/** The function that takes a row of `table` to its primary key values. */
export function keyOf<T extends TableName>(table: T): (row: Row<T>) => KeyValues {
  const columns = tables[table].primaryKey as readonly string[];
  return (row) => columns.map((column) => (row as Record<string, unknown>)[column]);
}

/** Key order: numbers as numbers, anything else as text, column by column. */
export function compareKeys(a: KeyValues, b: KeyValues): number {
  for (let i = 0; i < a.length; i++) {
    const order = compareValues(a[i], b[i]);
    if (order !== 0) return order;
  }
  return 0;
}

/** One key column's order: numbers as numbers, anything else as text (null as ''). */
function compareValues(x: unknown, y: unknown): number {
  if (x === y) return 0;
  if (typeof x === 'number' && typeof y === 'number') return x - y;
  return String(x ?? '') < String(y ?? '') ? -1 : 1;
}
