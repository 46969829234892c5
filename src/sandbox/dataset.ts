/**
 * The sandbox's data set: a deterministic function of (seed, studies, responses).
 *
 * Only a compact index is kept per response (id, times, flags); the payloads (answers,
 * transcript) are generated on demand from (seed, study, response index), so 50k responses
 * start in well under a second and cost a few MB.
 *
 * Choices the spec leaves open, documented here once:
 * - Studies are listed, and responses paged, by created_at then id (a stable order).
 * - Every 5th list item (response_number % 5 == 0) omits response_number and updated_at,
 *   as the spec's sample does. The sandbox still keeps an internal updated_at for each, and
 *   updated_since filters on it.
 * - The answers object is keyed by question text; when two questions share a text the later
 *   keys get " (2)", " (3)" so that there stays one key per question.
 * - Media paths carry hashes of the ids, not the ids, so hostile ids never reach them.
 */
import type {
  Answer,
  ListedResponse,
  SingleResponse,
  Study,
  TranscriptRow,
  Video,
} from '../api/resources.ts';
import type { Clock } from './clock.ts';
import { DAY_MS, iso, isoWithOffset, responseSpacing, studyDates } from './dates.ts';
import { PlantedData, passesContact } from './personal.ts';
import { intBetween, pick, type Random, randomFor, stableHex, stableUuid, uuidFrom } from './prng.ts';
import {
  fieldsAt,
  parametersOf,
  type Question,
  questionsFor,
  questionsOf,
  type StudyChanges,
} from './study-schema.ts';
import {
  followUps,
  forcedReplies,
  hostileReplies,
  introMessages,
  introReplies,
  outroMessage,
  plainReplies,
  studyThemes,
  summaries,
  utmSources,
} from './text.ts';

export type Modality = 'text' | 'audio' | 'video';
/**
 * The keys the sandbox knows: primary and secondary see different, overlapping sets of studies
 * (for tests of what a key cannot see); all sees every study (the key `study-export sandbox` prints).
 */
export type KeyName = 'primary' | 'secondary' | 'all';

export interface ResponseEntry {
  id: string;
  /** Generation index: the payload is a function of (seed, study content key, index). */
  index: number;
  createdMs: number;
  /** Internal last update, also for list items that do not show updated_at. */
  updatedMs: number;
  inProgress: boolean;
}

export interface StudyRecord {
  id: string;
  linkId: string;
  title: string;
  createdMs: number;
  createdAt: string;
  modality: Modality;
  contentKey: string;
  /** Its first responses take the forced replies (text.ts forcedReplies). */
  forcedReplies: boolean;
  questions: Question[];
  /** Its schema's changes since it was generated (study-schema.ts). */
  changes?: StudyChanges;
  entries: ResponseEntry[];
  byId: Map<string, ResponseEntry>;
  visibleTo: Set<KeyName>;
  nextIndex: number;
}

export interface TranscriptLine {
  moderator: string;
  user: string;
  dgqId: string;
  conceptId: string | null;
  answerId: string | null;
}

/** Signs media paths for the detail payload (provided by the media listeners). */
export interface MediaLinker {
  audio(path: string): string;
  video(path: string): Video;
}

const offsets = ['+02:00', '-05:00', '+05:30', '+00:00', '+09:00', '-03:30'];
const modalities: readonly Modality[] = ['text', 'audio', 'video'];

export interface DataSetOptions {
  seed: number;
  studies: number;
  responses: number;
}

export class DataSet {
  readonly studies: StudyRecord[] = [];
  private addedStudies = 0;
  /** When generated study i is created: `start + i * step` (see studyDates). */
  private readonly dates: { start: number; step: number };

  constructor(
    private readonly options: DataSetOptions,
    private readonly clock: Clock,
  ) {
    this.dates = studyDates(options, clock.now());
    for (let i = 0; i < options.studies; i++) this.studies.push(this.generateStudy(i));
  }

  // ---- lookups -------------------------------------------------------------------------

  visibleStudies(key: KeyName): StudyRecord[] {
    return this.sortedStudies().filter((study) => key === 'all' || study.visibleTo.has(key));
  }

  sortedStudies(): StudyRecord[] {
    return [...this.studies].sort((a, b) => a.createdMs - b.createdMs || compare(a.id, b.id));
  }

  byLinkId(linkId: string): StudyRecord | undefined {
    return this.studies.find((study) => study.linkId === linkId);
  }

  byLinkIdOrId(value: string): StudyRecord | undefined {
    return this.byLinkId(value) ?? this.studies.find((study) => study.id === value);
  }

  // ---- payloads ------------------------------------------------------------------------

  studyPayload(study: StudyRecord): Study {
    return {
      id: study.id,
      link_id: study.linkId,
      title: study.title,
      created_at: study.createdAt,
      desc: `${study.title} (${study.entries.length} Responses)`,
      ...fieldsAt(study.changes, 'study'),
    };
  }

  listItem(study: StudyRecord, entry: ResponseEntry): ListedResponse {
    const random = randomFor(this.options.seed, study.contentKey, entry.index, 'list');
    const lines = this.conversation(study, entry);
    const planted = new PlantedData(this.options.seed, study.contentKey, entry.index);
    const answers: Record<string, string> = {
      Summary: entry.inProgress ? '' : planted.summary(pick(random, summaries)),
    };
    const answersArray = questionsOf(study.questions, study.changes, entry.index).map(
      (question, q): Answer => {
        const said = lines
          .filter(
            (line) =>
              line.answerId !== null &&
              line.dgqId === question.dgqId &&
              line.conceptId === question.conceptId,
          )
          .map((line) => line.user)
          .filter((text) => text !== '')
          .join('\n');
        answers[question.answersKey] = said;
        return {
          answer_id: answerId(this.options.seed, study, entry, q),
          discussion_guide_question_id: question.dgqId,
          concept_id: question.conceptId,
          question_id: question.questionId,
          question: question.text,
          answer: said,
        };
      },
    );
    const bare = (entry.index + 1) % 5 === 0;
    // Every fifth item lacks the two fields the spec's own sample omits.
    return {
      id: entry.id,
      ...(bare ? {} : { response_number: entry.index + 1 }),
      created_at: iso(entry.createdMs),
      ...(bare ? {} : { updated_at: iso(entry.updatedMs) }),
      answers,
      answers_array: answersArray,
      attributes: {
        ...attributes(random, this.options.seed, study, entry),
        ...(passesContact(this.options.seed, study.contentKey) ? planted.contact() : {}),
      },
      short_transcript: lines.map((line) => `• ${shorten(line.moderator)} → ${line.user}`).join('\n'),
      ...fieldsAt(study.changes, 'response'),
    };
  }

  detail(study: StudyRecord, entry: ResponseEntry, media: MediaLinker): SingleResponse {
    const mediaBase = `${study.id}/${stableHex(16, study.id, entry.id)}`;
    const transcript = this.conversation(study, entry).map(
      (line, row): TranscriptRow => ({
        moderator: line.moderator,
        user: line.user,
        discussion_guide_question_id: line.dgqId,
        concept_id: line.conceptId,
        answer_id: line.answerId,
        // An audio study has no recording for an empty reply; a video study films question rows only.
        audio:
          study.modality === 'audio' && line.user !== ''
            ? media.audio(`/audio/${mediaBase}/${row}.mp3`)
            : null,
        video:
          study.modality === 'video' && line.answerId !== null
            ? media.video(`/video/${mediaBase}/${row}`)
            : null,
        ...fieldsAt(study.changes, 'transcript_row'),
      }),
    );
    return { id: entry.id, survey: study.linkId, transcript };
  }

  /** The conversation of one response, row by row, generated from its index. */
  conversation(study: StudyRecord, entry: ResponseEntry): TranscriptLine[] {
    const random = randomFor(this.options.seed, study.contentKey, entry.index, 'talk');
    const planted = new PlantedData(this.options.seed, study.contentKey, entry.index);
    let forced = study.forcedReplies ? entry.index * 8 : forcedReplies.length;
    const reply = (): string => {
      const hostile = forcedReplies[forced++];
      if (hostile !== undefined) return hostile;
      return planted.reply(random() < 0.3 ? pick(random, hostileReplies) : pick(random, plainReplies));
    };
    const lines: TranscriptLine[] = [
      {
        moderator: pick(random, introMessages),
        user: pick(random, introReplies),
        dgqId: 'intro',
        conceptId: null,
        answerId: null,
      },
    ];
    // An in-progress response stops before its last question.
    const questions = questionsOf(study.questions, study.changes, entry.index);
    const asked = entry.inProgress ? questions.length - 1 : questions.length;
    questions.slice(0, asked).forEach((question, q) => {
      const id = answerId(this.options.seed, study, entry, q);
      const base = { dgqId: question.dgqId, conceptId: question.conceptId, answerId: id };
      lines.push({ moderator: question.text, user: reply(), ...base });
      if (q === 1 || random() < 0.25)
        lines.push({ moderator: pick(random, followUps), user: reply(), ...base });
    });
    if (!entry.inProgress) {
      lines.push({
        moderator: outroMessage,
        user: pick(random, ['Thanks!', '', 'Bye 👋']),
        dgqId: 'outro',
        conceptId: null,
        answerId: null,
      });
    }
    return lines;
  }

  // ---- changes (test controls) ---------------------------------------------------------

  addResponse(study: StudyRecord, id?: string, createdMs = this.clock.now()): ResponseEntry {
    const index = study.nextIndex++;
    const now = createdMs;
    const entry: ResponseEntry = {
      id: id ?? stableUuid(this.options.seed, study.contentKey, 'response', index),
      index,
      createdMs: now,
      updatedMs: now,
      inProgress: false,
    };
    insertEntry(study, entry);
    return entry;
  }

  addStudy(spec: {
    link_id: string;
    title?: string;
    modality?: Modality;
    responses?: number;
    responseIds?: string[];
  }): StudyRecord {
    const n = this.addedStudies++;
    const title = spec.title ?? `Added study ${n + 1}`;
    const now = this.clock.now();
    const study = this.newStudy({
      id: stableUuid(this.options.seed, 'added-study', n),
      linkId: spec.link_id,
      title,
      createdMs: now,
      createdAt: iso(now),
      modality: spec.modality ?? 'text',
      contentKey: `added-${n}`,
      forcedReplies: true,
      topic: title,
    });
    const ids = spec.responseIds ?? [];
    const count = spec.responseIds ? ids.length : (spec.responses ?? 3);
    // One millisecond apart, ending now, so that the list keeps the order they were given in.
    for (let i = 0; i < count; i++) this.addResponse(study, ids[i], now - (count - 1 - i));
    study.visibleTo.add('primary');
    study.visibleTo.add('secondary');
    this.studies.push(study);
    return study;
  }

  // ---- generation ----------------------------------------------------------------------

  private generateStudy(i: number): StudyRecord {
    const { seed, responses } = this.options;
    const theme = studyThemes[i % studyThemes.length]!;
    const title =
      i < studyThemes.length ? theme.title : `${theme.title} #${Math.floor(i / studyThemes.length) + 1}`;
    const createdMs = this.dates.start + i * this.dates.step;
    const study = this.newStudy({
      id: stableUuid(seed, 'study', i),
      linkId: `${slug(title)}-${stableHex(4, seed, 'link', i)}`,
      title,
      createdMs,
      createdAt: isoWithOffset(createdMs, offsets[i % offsets.length]!),
      modality: modalities[i % modalities.length]!,
      contentKey: `study-${i}`,
      forcedReplies: i < FORCED_STUDIES,
      topic: theme.topic,
    });
    // The primary key sees all but the last study; the secondary key sees odd ones and the last.
    const last = i === this.options.studies - 1;
    if (!last || this.options.studies === 1) study.visibleTo.add('primary');
    if (i % 2 === 1 || last) study.visibleTo.add('secondary');
    const spacing = responseSpacing(responses);
    for (let r = 0; r < responses; r++) {
      const random = randomFor(seed, study.contentKey, r, 'entry');
      const created = createdMs + 3_600_000 + r * spacing + Math.floor(random() * (spacing / 2));
      const inProgress = r === 2 || random() < 0.06;
      let updated = created + intBetween(random, 3, 40) * 60_000 + intBetween(random, 0, 999);
      // Some analyses are re-run days later.
      if (!inProgress && random() < 0.2)
        updated += intBetween(random, 1, 20) * DAY_MS + intBetween(random, 0, 86_399) * 1000;
      const entry: ResponseEntry = {
        id: stableUuid(seed, study.contentKey, 'response', r),
        index: r,
        createdMs: created,
        updatedMs: updated,
        inProgress,
      };
      study.entries.push(entry);
      study.byId.set(entry.id, entry);
    }
    study.nextIndex = responses;
    return study;
  }

  /** The study's own fields (as StudyRecord declares them) and a topic for its questions. */
  private newStudy(
    fields: Omit<StudyRecord, 'questions' | 'entries' | 'byId' | 'visibleTo' | 'nextIndex'> & {
      topic: string;
    },
  ): StudyRecord {
    const { topic, ...rest } = fields;
    return {
      ...rest,
      questions: questionsFor(this.options.seed, fields.contentKey, topic),
      entries: [],
      byId: new Map(),
      visibleTo: new Set<KeyName>(),
      nextIndex: 0,
    };
  }
}

/**
 * Generated studies whose first responses take the forced replies (the hostile texts, and the
 * long ones of 20,000 and 40,000 characters): every data set of up to this many studies has
 * them in each study, and a data set of many small studies holds no more of them than one of a
 * few large studies, so the two carry the same text (bench/studies.ts compares them).
 */
const FORCED_STUDIES = 16;

/** Keeps entries sorted by created_at then id, the paging order. */
function insertEntry(study: StudyRecord, entry: ResponseEntry): void {
  study.entries.push(entry);
  study.byId.set(entry.id, entry);
  const before = study.entries[study.entries.length - 2];
  if (
    before &&
    (before.createdMs > entry.createdMs ||
      (before.createdMs === entry.createdMs && compare(before.id, entry.id) > 0))
  ) {
    study.entries.sort((a, b) => a.createdMs - b.createdMs || compare(a.id, b.id));
  }
}

function answerId(seed: number, study: StudyRecord, entry: ResponseEntry, q: number): string {
  return uuidFrom(randomFor(seed, study.contentKey, entry.index, 'answer', q));
}

/** A UUID-shaped id drawn from a PRNG: cheap enough to make per answer on every request. */
function attributes(
  random: Random,
  seed: number,
  study: StudyRecord,
  entry: ResponseEntry,
): Record<string, string> {
  const attrs: Record<string, string> = {
    id: `p-${stableHex(10, seed, study.contentKey, entry.index, 'participant')}`,
    utm_source: pick(random, utmSources),
  };
  if (random() < 0.3) attrs['lang'] = pick(random, ['en', 'ja', 'ar', 'ru']);
  if (random() < 0.1) attrs['ref'] = '=HYPERLINK("http://example.invalid")';
  return parametersOf(attrs, study.changes, entry.index);
}

function shorten(message: string): string {
  const words = message.split(/\s+/);
  return words.length <= 4 ? message : `${words.slice(0, 4).join(' ')}…`;
}

function slug(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
