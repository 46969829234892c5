/**
 * What report.html draws, counted from the rows as they pass to the table writers: per
 * study, responses by day, those without a summary yet, answered and empty answers per
 * question with a sample of the answers, answer lengths, responses per attribute value and
 * per modality, recordings archived and failed. Small and of bounded size per study and
 * question, so a run of any size keeps it in memory.
 */
import type { Reject, RejectSink } from '../../records.ts';
import { type Row, responseStatus, type TableName } from '../../tables/index.ts';
import type { TableWriters } from '../table-writers.ts';
import { codePoints, offerAnswer, type SampledAnswer } from './answer-sample.ts';
import { countAttribute, countModality, emptySegments, type SegmentCounts } from './segment-counts.ts';

/** Upper bounds (inclusive, in characters) of the answer length buckets; the last is open. */
export const lengthBuckets = [10, 50, 100, 250, 500, 1000] as const;

export interface QuestionStats {
  /** The smallest answer position seen: questions are listed in this order. */
  position: number;
  question: string;
  discussion_guide_question_id: string | null;
  concept_id: string | null;
  answered: number;
  empty: number;
  /** A few of its answers with text (answer-sample.ts), lowest rank first. */
  sample: SampledAnswer[];
}

export interface StudyStats {
  study_id: string;
  link_id: string;
  title: string;
  responses: number;
  /** Responses the service sent without a summary: its analysis is still running. */
  inProgress: number;
  /** created_at's UTC day (YYYY-MM-DD) -> responses. */
  byDay: Map<string, number>;
  /** discussion_guide_question_id and concept_id -> counts. */
  questions: Map<string, QuestionStats>;
  /** Answered (non-empty) answers per length bucket: lengthBuckets, then one more. */
  lengths: number[];
  /** Responses per attribute value and per modality. */
  segments: SegmentCounts;
  turns: number;
  turnsWithAudio: number;
  turnsWithVideo: number;
  /** kind -> archived / failed recordings. */
  media: Map<string, { archived: number; failed: number }>;
  /** Why downloads failed -> how many. */
  mediaErrors: Map<string, number>;
}

/** Distinct reasons kept for the report; more are counted as "other". */
const maxReasons = 50;

export class RunStats {
  readonly studies = new Map<string, StudyStats>();
  rejects = 0;
  readonly rejectReasons = new Map<string, number>();

  /** The same writers, counting every row that passes. */
  observe(writers: TableWriters): TableWriters {
    return {
      write: (table, rows) => {
        this.add(table, rows);
        return writers.write(table, rows);
      },
      copyStudy: (studyId, copy, group) => writers.copyStudy(studyId, copy, group),
      endStudy: (studyId, options) => writers.endStudy(studyId, options),
      close: () => writers.close(),
      abort: () => writers.abort(),
    };
  }

  /** The same sink, counting every reject by its reason. */
  observeRejects<S extends RejectSink>(sink: S): S {
    const write = sink.write.bind(sink);
    sink.write = (reject: Reject) => {
      this.reject(reject.reason);
      write(reject);
    };
    return sink;
  }

  reject(reason: string): void {
    this.rejects += 1;
    countReason(this.rejectReasons, reason);
  }

  add<T extends TableName>(table: T, rows: readonly Row<T>[]): void {
    for (const row of rows) this.addRow(table, row as Row<TableName>);
  }

  private addRow(table: TableName, row: Row<TableName>): void {
    switch (table) {
      case 'studies': {
        const r = row as Row<'studies'>;
        const study = this.study(r.study_id);
        study.link_id = r.link_id;
        study.title = r.title;
        return;
      }
      case 'responses': {
        const r = row as Row<'responses'>;
        const study = this.study(r.study_id);
        if (!study.link_id) study.link_id = r.link_id;
        study.responses += 1;
        const inProgress = responseStatus(r.summary) === 'in progress';
        if (inProgress) study.inProgress += 1;
        // Absent from current/ parts written before the column existed.
        if (r.modality !== undefined) countModality(study.segments, r.modality, inProgress);
        const day = r.created_at.slice(0, 10);
        study.byDay.set(day, (study.byDay.get(day) ?? 0) + 1);
        return;
      }
      case 'answers': {
        const r = row as Row<'answers'>;
        const study = this.study(r.study_id);
        const key = `${r.discussion_guide_question_id ?? ''}\u0000${r.concept_id ?? ''}`;
        let question = study.questions.get(key);
        if (!question) {
          question = {
            position: r.position,
            question: r.question,
            discussion_guide_question_id: r.discussion_guide_question_id ?? null,
            concept_id: r.concept_id ?? null,
            answered: 0,
            empty: 0,
            sample: [],
          };
          study.questions.set(key, question);
        }
        question.position = Math.min(question.position, r.position);
        if (!question.question && r.question) question.question = r.question;
        const text = r.answer.trim();
        if (text === '') {
          question.empty += 1;
          return;
        }
        question.answered += 1;
        const length = codePoints(text);
        offerAnswer(question.sample, r.response_id, r.answer_id, r.answer);
        const bucket = lengthBuckets.findIndex((bound) => length <= bound);
        const at = bucket === -1 ? lengthBuckets.length : bucket;
        study.lengths[at] = (study.lengths[at] ?? 0) + 1;
        return;
      }
      case 'attributes': {
        const r = row as Row<'attributes'>;
        countAttribute(this.study(r.study_id).segments, r.key, r.value);
        return;
      }
      case 'transcript': {
        const r = row as Row<'transcript'>;
        const study = this.study(r.study_id);
        study.turns += 1;
        if (r.has_audio) study.turnsWithAudio += 1;
        if (r.has_video) study.turnsWithVideo += 1;
        return;
      }
      case 'media': {
        const r = row as Row<'media'>;
        const study = this.study(r.study_id);
        const counts = study.media.get(r.kind) ?? { archived: 0, failed: 0 };
        if (r.status === 'archived') counts.archived += 1;
        else {
          counts.failed += 1;
          countReason(study.mediaErrors, r.error ?? 'no reason given');
        }
        study.media.set(r.kind, counts);
        return;
      }
      default:
        return;
    }
  }

  private study(studyId: string): StudyStats {
    let study = this.studies.get(studyId);
    if (!study) {
      study = {
        study_id: studyId,
        link_id: '',
        title: '',
        responses: 0,
        inProgress: 0,
        byDay: new Map(),
        questions: new Map(),
        lengths: Array.from({ length: lengthBuckets.length + 1 }, () => 0),
        segments: emptySegments(),
        turns: 0,
        turnsWithAudio: 0,
        turnsWithVideo: 0,
        media: new Map(),
        mediaErrors: new Map(),
      };
      this.studies.set(studyId, study);
    }
    return study;
  }
}

function countReason(reasons: Map<string, number>, reason: string): void {
  const key = reasons.has(reason) || reasons.size < maxReasons ? reason : 'other reasons';
  reasons.set(key, (reasons.get(key) ?? 0) + 1);
}
