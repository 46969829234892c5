/**
 * The DuckDB baseline for transform and load: the same flatten from the same
 * raw/*.jsonl.gz (read_json, unnest, dedupe by newest updated_at) to the same tables,
 * each written as CSV and as Parquet (SNAPPY), plus one wide CSV per study (PIVOT).
 *
 * It does less than replay does, which only makes the baseline faster: no schema
 * validation, no `extra` columns, no formula escaping in CSV, and wide headers are the
 * question text (plus the concept) without replay's collision handling.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';

export interface DuckdbInput {
  rawDir: string;
  outDir: string;
}

const sqlString = (s: string) => `'${s.replaceAll("'", "''")}'`;

/** Statements that build one temp table per output table from the raw files. */
function flattenStatements(rawDir: string): string[] {
  const raw = (operation: string) => sqlString(join(rawDir, `${operation}.jsonl.gz`));
  return [
    `CREATE TEMP TABLE surveys AS
       SELECT unnest(from_json(payload, '["JSON"]')) AS s
       FROM read_json(${raw('list_surveys')}, format = 'newline_delimited', columns = {payload: 'JSON'})`,
    `CREATE TEMP TABLE pages AS
       SELECT row_number() OVER () AS page_seq, study_id, payload
       FROM read_json(${raw('list_responses')}, format = 'newline_delimited',
                      columns = {study_id: 'VARCHAR', payload: 'JSON'})`,
    `CREATE TEMP TABLE listed AS
       SELECT page_seq, item_pos, study_id, item ->> 'id' AS id, item FROM (
         SELECT page_seq, study_id, unnest(from_json(payload, '["JSON"]')) AS item,
                generate_subscripts(from_json(payload, '["JSON"]'), 1) AS item_pos
         FROM pages)
       QUALIFY row_number() OVER (
         PARTITION BY study_id, item ->> 'id'
         ORDER BY coalesce(item ->> 'updated_at', item ->> 'created_at')::TIMESTAMPTZ DESC,
                  page_seq DESC, item_pos DESC) = 1`,
    `CREATE TEMP TABLE details AS
       SELECT d.study_id, d.response_id, d.payload
       FROM read_json(${raw('get_response')}, format = 'newline_delimited',
                      columns = {study_id: 'VARCHAR', response_id: 'VARCHAR', received_at: 'VARCHAR',
                                 payload: 'JSON'}) AS d
       SEMI JOIN listed AS l ON l.study_id = d.study_id AND l.id = d.response_id
       QUALIFY row_number() OVER (PARTITION BY d.study_id, d.response_id ORDER BY d.received_at DESC) = 1`,
    `CREATE TEMP TABLE t_studies AS
       SELECT s ->> 'id' AS study_id, s ->> 'link_id' AS link_id, s ->> 'title' AS title,
              (s ->> 'created_at')::TIMESTAMPTZ AS created_at, s ->> 'desc' AS "desc",
              TRY_CAST(regexp_extract(s ->> 'desc', ' \\((\\d+) Responses?\\)$', 1) AS BIGINT)
                AS listed_response_count,
              NULL::VARCHAR AS extra
       FROM surveys WHERE s ->> 'id' IN (SELECT study_id FROM pages)`,
    `CREATE TEMP TABLE answers_all AS
       SELECT id AS response_id, study_id, page_seq, item_pos, a, pos FROM (
         SELECT id, study_id, page_seq, item_pos,
                unnest(from_json(item -> 'answers_array', '["JSON"]')) AS a,
                generate_subscripts(from_json(item -> 'answers_array', '["JSON"]'), 1) AS pos
         FROM listed)
       WHERE a ->> 'answer_id' <> 'Summary'`,
    `CREATE TEMP TABLE t_answers AS
       SELECT response_id, a ->> 'answer_id' AS answer_id, study_id,
              a ->> 'discussion_guide_question_id' AS discussion_guide_question_id,
              a ->> 'concept_id' AS concept_id, a ->> 'question' AS question, a ->> 'answer' AS answer,
              row_number() OVER (PARTITION BY response_id ORDER BY pos) AS position,
              NULL::VARCHAR AS extra
       FROM answers_all`,
    `CREATE TEMP TABLE questions_seen AS
       SELECT study_id, a ->> 'discussion_guide_question_id' AS dgq, a ->> 'concept_id' AS concept_id,
              first(a ->> 'question' ORDER BY page_seq, item_pos, pos) AS question,
              min(page_seq * 1000000 + item_pos * 1000 + pos) AS first_seen
       FROM answers_all GROUP BY ALL`,
    `CREATE TEMP TABLE t_questions AS
       SELECT study_id, dgq AS discussion_guide_question_id, concept_id, question,
              row_number() OVER (PARTITION BY study_id ORDER BY first_seen) AS position
       FROM questions_seen`,
    `CREATE TEMP TABLE transcript_all AS
       SELECT response_id, study_id, t, pos AS turn FROM (
         SELECT response_id, study_id, unnest(from_json(payload -> 'transcript', '["JSON"]')) AS t,
                generate_subscripts(from_json(payload -> 'transcript', '["JSON"]'), 1) AS pos
         FROM details)`,
    `CREATE TEMP TABLE t_transcript AS
       SELECT response_id, turn, study_id, t ->> 'answer_id' AS answer_id,
              t ->> 'discussion_guide_question_id' AS discussion_guide_question_id,
              t ->> 'concept_id' AS concept_id, t ->> 'moderator' AS moderator, t ->> 'user' AS "user",
              NULL::VARCHAR AS audio_file, NULL::VARCHAR AS video_file, NULL::VARCHAR AS extra,
              (t ->> 'audio') IS NOT NULL AS has_audio, (t -> 'video') <> 'null' AS has_video
       FROM transcript_all`,
    `CREATE TEMP TABLE t_responses AS
       SELECT l.id AS response_id, l.study_id, s.link_id,
              (l.item ->> 'response_number')::BIGINT AS response_number,
              (l.item ->> 'created_at')::TIMESTAMPTZ AS created_at,
              (l.item ->> 'updated_at')::TIMESTAMPTZ AS updated_at,
              l.item -> 'answers' ->> 'Summary' AS summary,
              l.item ->> 'short_transcript' AS short_transcript,
              coalesce(ac.n, 0) AS answer_count, coalesce(tc.n, 0) AS turn_count,
              coalesce(tc.modality, 'text') AS modality, NULL::VARCHAR AS extra
       FROM listed AS l
       JOIN t_studies AS s ON s.study_id = l.study_id
       LEFT JOIN (SELECT response_id, count(*) AS n FROM t_answers GROUP BY ALL) AS ac
         ON ac.response_id = l.id
       LEFT JOIN (SELECT response_id, count(*) AS n,
                         CASE WHEN bool_or(has_audio) THEN 'audio' WHEN bool_or(has_video) THEN 'video'
                              ELSE 'text' END AS modality
                  FROM t_transcript GROUP BY ALL) AS tc
         ON tc.response_id = l.id`,
    `CREATE TEMP TABLE t_attributes AS
       SELECT response_id, kv.key AS "key", study_id, kv.value AS "value" FROM (
         SELECT id AS response_id, study_id,
                unnest(map_entries(from_json(item -> 'attributes', '"MAP(VARCHAR, VARCHAR)"'))) AS kv
         FROM listed)`,
    `CREATE TEMP TABLE t_media AS
       SELECT NULL::VARCHAR AS response_id, NULL::BIGINT AS turn, NULL::VARCHAR AS kind,
              NULL::VARCHAR AS study_id, NULL::VARCHAR AS answer_id, NULL::VARCHAR AS file,
              NULL::VARCHAR AS content_type, NULL::BIGINT AS bytes, NULL::VARCHAR AS sha256,
              NULL::VARCHAR AS status, NULL::VARCHAR AS error
       WHERE false`,
  ];
}

const outputs: Record<string, string> = {
  studies: 'SELECT * FROM t_studies',
  responses: 'SELECT * FROM t_responses',
  questions: 'SELECT * FROM t_questions',
  answers: 'SELECT * FROM t_answers',
  transcript: 'SELECT * EXCLUDE (has_audio, has_video) FROM t_transcript',
  attributes: 'SELECT * FROM t_attributes',
  media: 'SELECT * FROM t_media',
};

function wideQuery(studyId: string): string {
  return `PIVOT (
      SELECT r.response_id, r.response_number, r.created_at, r.updated_at, r.summary,
             a.question || CASE WHEN a.concept_id IS NULL THEN '' ELSE ' [' || a.concept_id || ']' END
               AS header,
             a.answer
      FROM t_responses AS r JOIN t_answers AS a ON a.response_id = r.response_id
      WHERE r.study_id = ${sqlString(studyId)})
    ON header USING first(answer)
    GROUP BY response_id, response_number, created_at, updated_at, summary`;
}

export async function duckdbFlatten(
  input: DuckdbInput,
): Promise<{ ms: number; rows: Record<string, number> }> {
  await mkdir(join(input.outDir, 'wide'), { recursive: true });
  const started = performance.now();
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  const rows: Record<string, number> = {};
  try {
    for (const statement of flattenStatements(input.rawDir)) await connection.run(statement);
    for (const [table, query] of Object.entries(outputs)) {
      const base = join(input.outDir, table);
      await connection.run(`COPY (${query}) TO ${sqlString(`${base}.csv`)} (FORMAT csv, HEADER)`);
      await connection.run(
        `COPY (${query}) TO ${sqlString(`${base}.parquet`)} (FORMAT parquet, COMPRESSION snappy)`,
      );
      const count = await connection.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM (${query})`);
      rows[table] = Number(count.getRowObjectsJS()[0]?.n ?? 0);
    }
    const studies = await connection.runAndReadAll('SELECT study_id, link_id FROM t_studies');
    for (const study of studies.getRowObjectsJS()) {
      const target = join(input.outDir, 'wide', `${String(study.link_id).replace(/[^\w.-]/g, '_')}.csv`);
      await connection.run(
        `COPY (${wideQuery(String(study.study_id))}) TO ${sqlString(target)} (FORMAT csv, HEADER)`,
      );
    }
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
  return { ms: performance.now() - started, rows };
}
