/**
 * report.html's "What people said": per question of a study (named with its concept), a few
 * of its answers as they were written (the sample of answer-sample.ts) and where all the
 * others are. Respondents' text is escaped and shown as written, line breaks kept.
 */
import { conceptName, questionLabel } from '../../concept-name.ts';
import { escapeHtml as e } from '../codecs/escape.ts';
import { tableFormats } from '../formats/index.ts';
import { SAMPLE_SIZE, SAMPLE_TEXT_CHARS } from './answer-sample.ts';
import type { GuideSubject } from './codebook.ts';
import type { QuestionStats, StudyStats } from './run-stats.ts';

/** The study's questions in the order of their first appearance. */
export function orderedQuestions(stats: StudyStats): QuestionStats[] {
  return [...stats.questions.values()].sort((a, b) => a.position - b.position);
}

export function answersSection(stats: StudyStats, id: string, kind: GuideSubject['kind']): string {
  const list = orderedQuestions(stats);
  const parts = [`<h3 id="${id}-said">What people said</h3>`];
  if (list.length === 0) return `${parts[0]}<p>No answers.</p>`;
  const table =
    kind === 'current'
      ? 'answers/ (Parquet parts)'
      : tableFormats.map((format) => format.tableFile('answers')).join(' or ');
  parts.push(
    `<p class="note">Up to ${SAMPLE_SIZE} answers per question, the same ones every time the report is made`,
    ' (picked by a hash of their ids, not by what they say or when). Every answer is in the answers',
    ` table (${e(table)}), one row each, found by the ids under each question; in the study's wide`,
    ' sheet (wide/), a row per response and a column per question; and `study-export view` on this',
    ' folder searches them all.</p>',
  );
  list.forEach((question, i) => {
    parts.push(questionAnswers(question, `${id}-q${i + 1}`, i + 1));
  });
  return parts.join('');
}

function questionAnswers(question: QuestionStats, id: string, n: number): string {
  const total = question.answered + question.empty;
  const ids = [
    question.discussion_guide_question_id !== null
      ? `discussion_guide_question_id ${question.discussion_guide_question_id}`
      : '',
    question.concept_id ? `concept_id ${question.concept_id}` : '',
  ].filter((part) => part !== '');
  const parts = [
    `<section class="question" aria-labelledby="${id}" data-concept-id="${e(question.concept_id ?? '')}">`,
    `<h4 id="${id}">${n}. ${e(questionLabel(question.question, question.concept_id))}</h4>`,
  ];
  if (question.concept_id)
    parts.push(
      `<p class="note">About ${e(conceptName(question.concept_id))} (concept id ${e(question.concept_id)}).</p>`,
    );
  const shown = question.sample.length;
  parts.push(
    `<p class="note">${question.answered} of ${total} answers have text; ${shown === question.answered ? `all ${shown} shown` : `${shown} shown`}.` +
      (ids.length > 0 ? ` In the answers table: ${e(ids.join(', '))}.` : '') +
      '</p>',
  );
  for (const answer of question.sample) {
    const cut = answer.chars > SAMPLE_TEXT_CHARS;
    parts.push(
      `<figure class="answer" data-response-id="${e(answer.response_id)}" data-answer-id="${e(answer.answer_id)}"${cut ? ' data-cut' : ''}>`,
      `<blockquote>${e(answer.text)}</blockquote>`,
      `<figcaption>response ${e(answer.response_id)}${cut ? `; the first ${SAMPLE_TEXT_CHARS} of its ${answer.chars} characters` : ''}</figcaption></figure>`,
    );
  }
  parts.push('</section>');
  return parts.join('');
}
