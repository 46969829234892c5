/**
 * One study's bag: its payload under data/ written file by file into the sink (recordings; the
 * tables and the study's files in every study format the output has, from the rows the handoff
 * reader gives, by output/handoff-files.ts as share's; conversations, index, guide, provenance),
 * then the tag files. Nothing is fetched from the service: the bag holds what the output holds,
 * and says what it lacks. The study is read response by response, never whole.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { nameOf } from '../names.ts';
import { dataPackage } from '../output/datapackage.ts';
import type { CsvOptions } from '../output/formats/csv.ts';
import { csvText } from '../output/formats/csv.ts';
import type { Format } from '../output/formats/index.ts';
import { type HandoffFiles, type ResponseRows, writeHandoffFiles } from '../output/handoff-files.ts';
import { createSortedSpill } from '../output/sorted-spill.ts';
import { privacySummary } from '../privacy/index.ts';
import { byResponse, type HandoffStudy, type RunReader } from '../reader/index.ts';
import { redact } from '../redact.ts';
import { openLocalFile } from '../storage/local-file.ts';
import type { Row } from '../tables/index.ts';
import type { Conversation, TurnRecording } from './conversation.ts';
import { conversationText } from './conversation.ts';
import {
  conversationPage,
  type GuideFacts,
  indexEnd,
  indexListEnd,
  indexListItem,
  indexSection,
  indexStart,
  readme,
  report,
} from './guide.ts';
import { diskFile, memoryFile, Payload } from './payload.ts';
import { filterRaw, PROVENANCE_DIR, runsJson } from './provenance.ts';
import { addRecording, type PlannedRecording } from './recording-files.ts';
import type { BagSink } from './sink.ts';
import { writeTagFiles } from './tag-writer.ts';

export interface BagInfoSettings {
  source_organization?: string | undefined;
  contact_name?: string | undefined;
  contact_email?: string | undefined;
}

export interface StudyBagInput {
  /** The output's pipeline name: the bag names itself and its source by it. */
  pipeline: string;
  /** The study as the bag carries it: through the handoff reader, de-identified by its profile or identified. */
  study: HandoffStudy;
  /** The study's file name (src/names.ts): its sheets' and its bag's. */
  name: string;
  /** The runs that exported the study, oldest first. */
  runs: readonly RunReader[];
  sink: BagSink;
  /** A local folder of the bag's own, for files written before they are added. */
  scratch: string;
  info: BagInfoSettings;
  tool: { name: string; version: string };
  /** The output's formats (each study format among them adds its file) and how it writes CSV. */
  formats: readonly Format[];
  csv: CsvOptions;
  /** The bag's date: the newest of its runs' finish times. */
  time: Date;
}

export interface MissingRecording {
  response_id: string;
  turn: number;
  kind: string;
  reason: string;
}

export interface StudyBagResult {
  location: string;
  /** The responses the bag holds (its responses table), for the ledger (handoffs/). */
  responseIds: string[];
  files: number;
  bytes: number;
  recordings: number;
  missing: MissingRecording[];
}

export async function writeStudyBag(input: StudyBagInput): Promise<StudyBagResult> {
  const payload = new Payload(input.sink, input.scratch);
  const planned = await addRecordings(payload, input.study, input.scratch);
  const index = conversationIndex(input.scratch);
  const files = join(input.scratch, 'files');
  const work = join(input.scratch, 'work');
  await mkdir(work, { recursive: true });
  const recordingsOf = byResponse(planned.map((plan) => ({ response_id: plan.recording.response_id, plan })));
  const handed = await writeHandoffFiles({
    source: input.study,
    dir: files,
    tablesFolder: 'tables',
    scratchDir: work,
    formats: input.formats,
    csv: input.csv,
    fileName: input.name,
    onResponse: async (rows) => {
      const conversation = conversationOf(rows, recordingsOf.get(rows.response.response_id) ?? []);
      await addConversation(payload, conversation, input.study.study.title);
      await index.add(conversation);
    },
  });
  for (const file of [...handed.tables, ...handed.studyFiles])
    await payload.add(await diskFile(`data/${file.path}`, join(files, file.path)), { described: true });
  const newest = input.runs.at(-1);
  const facts: GuideFacts = {
    pipeline: input.pipeline,
    service: redact(newest?.manifest.config?.source?.base_url ?? ''),
    runId: newest?.id ?? '',
    baggedAt: input.time.toISOString(),
    study: input.study.study,
    responses: handed.responseIds.length,
    stats: handed.stats,
    recordings: planned.length,
    missing: planned.filter((p) => !p.path).length,
    privacy: input.study.privacy,
    studyFiles: handed.studyFiles,
    rawFiles: 0,
  };
  await payload.add(await diskFile('data/index.html', await index.write(facts)), { described: true });
  await addRecordingList(payload, input.scratch, planned);
  facts.rawFiles = await addProvenance(payload, input);
  await payload.add(memoryFile('data/README.md', readme(facts)), { described: true });
  await payload.add(memoryFile('data/report.html', report(facts)), { described: true });
  await payload.add(
    memoryFile(
      'data/datapackage.json',
      `${JSON.stringify(descriptor(input, payload, handed, facts), null, 2)}\n`,
    ),
  );
  await writeTagFiles(input.sink, payload, bagInfo(input));
  return {
    location: input.sink.location,
    responseIds: handed.responseIds,
    files: payload.files,
    bytes: payload.bytes,
    recordings: planned.length,
    missing: planned
      .filter((p) => !p.path)
      .map((p) => ({
        response_id: p.recording.response_id,
        turn: p.recording.turn,
        kind: p.recording.kind,
        reason: p.note ?? '',
      })),
  };
}

/** data/datapackage.json: the tables, the wide sheet, every other file a reader opens, and how the bag was made. */
function descriptor(input: StudyBagInput, payload: Payload, handed: HandoffFiles, facts: GuideFacts) {
  const { study } = facts;
  return dataPackage({
    name: `${input.pipeline}-${study.link_id}`,
    title: study.title,
    description: `One study exported by study-export: ${facts.responses} responses. Privacy: ${privacySummary(input.study.privacy, { recordings: true })} (see privacy).`,
    created: facts.baggedAt,
    tables: handed.tables.map((file) => ({ ...file, ...digestFields(payload, file.path) })),
    sheets: handed.studyFiles.flatMap((file) =>
      file.header
        ? [{ path: file.path, header: file.header, bom: input.csv.bom, ...digestFields(payload, file.path) }]
        : [],
    ),
    files: [
      ...handed.studyFiles.filter((file) => !file.header).map((file) => file.path),
      'recordings.csv',
      'index.html',
      'README.md',
      'report.html',
    ].map((path) => ({ path, ...digestFields(payload, path) })),
    privacy: input.study.privacy,
  });
}

/** A described file's size and SHA-256; one added without `described` is a bug, not a file without. */
function digestFields(payload: Payload, path: string): { bytes: number; sha256: string } {
  const digests = payload.digestsOf(path);
  if (!digests)
    throw new Error(`data/${path}: datapackage.json describes it, but it was not added as described`);
  return { bytes: digests.bytes, sha256: digests.sha256 };
}

/**
 * Every recording, response by response. An MPEG-TS recording gets a copy browsers play unless
 * its turn's MP4 recording is in the bag (`media.video: both`), which they play already.
 */
async function addRecordings(
  payload: Payload,
  study: HandoffStudy,
  scratch: string,
): Promise<PlannedRecording[]> {
  const planned: PlannedRecording[] = [];
  for await (const group of study.recordings()) {
    const withMp4 = new Set(
      group.filter((r) => r.kind === 'video' && !('reason' in r.located)).map((r) => r.turn),
    );
    for (const recording of group) {
      const copyTo = withMp4.has(recording.turn) ? null : join(scratch, 'browser-copy.mp4');
      planned.push(await addRecording(payload, recording, copyTo));
    }
  }
  return planned;
}

/** A response's conversation: its rows and the recordings the bag holds of it. */
function conversationOf(rows: ResponseRows, planned: readonly { plan: PlannedRecording }[]): Conversation {
  return {
    response: rows.response,
    name: nameOf(rows.response.response_id),
    transcript: rows.transcript,
    answers: new Map(rows.answers.map((a) => [a.answer_id, a])),
    attributes: rows.attributes,
    recordings: planned.map(
      ({ plan }): TurnRecording => ({
        turn: plan.recording.turn,
        kind: plan.recording.kind,
        file: plan.path,
        copy: plan.copyPath,
        note: plan.note,
      }),
    ),
  };
}

/** A conversation's page and text. */
async function addConversation(payload: Payload, conversation: Conversation, title: string): Promise<void> {
  const base = `data/conversations/${conversation.name}`;
  await payload.add(memoryFile(`${base}.html`, conversationPage(conversation, title)));
  await payload.add(memoryFile(`${base}.txt`, conversationText(conversation, title)));
}

interface IndexEntry {
  number: number | null;
  created: string;
  id: string;
  html: string;
}

/**
 * index.html: the conversations in the order people number them (response_number, then
 * creation), each listed and then shown. They come in response_id order, so their list items
 * and sections go through two sorted spills; the page is written in scratch after the last.
 */
function conversationIndex(scratch: string) {
  const spill = (name: string) =>
    createSortedSpill<IndexEntry, Omit<IndexEntry, 'html'>>({
      dir: scratch,
      name,
      // Without the page's HTML: a buffered entry is held as its JSON line, not twice.
      keyOf: ({ number, created, id }) => ({ number, created, id }),
      runBytes: 2 ** 18,
      compare: (a, b) =>
        (a.number ?? Number.MAX_SAFE_INTEGER) - (b.number ?? Number.MAX_SAFE_INTEGER) ||
        (a.created < b.created ? -1 : a.created > b.created ? 1 : 0) ||
        (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    });
  const items = spill('index-items');
  const sections = spill('index-sections');
  return {
    async add(conversation: Conversation): Promise<void> {
      const { response } = conversation;
      const key = {
        number: response.response_number,
        created: response.created_at,
        id: response.response_id,
      };
      await items.add({ ...key, html: indexListItem(conversation) });
      await sections.add({ ...key, html: indexSection(conversation) });
    },
    /** Writes index.html; resolves with its path. */
    async write(facts: GuideFacts): Promise<string> {
      const path = join(scratch, 'index.html');
      const file = await openLocalFile(path);
      const text = (html: string) => file.write(Buffer.from(html, 'utf8'));
      try {
        await text(indexStart(facts));
        for await (const entry of items.sorted()) await text(entry.html);
        await text(indexListEnd);
        for await (const entry of sections.sorted()) await text(entry.html);
        await text(indexEnd);
        await file.close();
      } catch (error) {
        await file.abort();
        throw error;
      } finally {
        await items.remove();
        await sections.remove();
      }
      return path;
    },
  };
}

const recordingColumns = [
  'response_id',
  'turn',
  'kind',
  'in_bag',
  'file',
  'bytes',
  'browser_copy',
  'run_id',
  'source_entry',
  'source_sha256',
  'content_type',
  'note',
] as const;

/** recordings.csv: every recording, where it is in the bag and where it came from, or why it is missing. */
async function addRecordingList(payload: Payload, scratch: string, planned: readonly PlannedRecording[]) {
  const records = planned.map(({ recording, path, bytes, copyPath, note }) => {
    const found = 'reason' in recording.located ? null : recording.located;
    const row: Row<'media'> | null = found?.row ?? recording.row;
    return [
      recording.response_id,
      recording.turn,
      recording.kind,
      path ? 'yes' : 'no',
      path,
      path ? bytes : null,
      copyPath,
      found?.runId ?? null,
      found?.entry.name ?? null,
      row?.sha256 ?? null,
      row?.content_type ?? null,
      note,
    ];
  });
  const local = join(scratch, 'recordings.csv');
  await writeFile(local, csvText([[...recordingColumns], ...records], { bom: false, escape_formulae: true }));
  await payload.add(await diskFile('data/recordings.csv', local), { described: true });
}

/** runs.json and the study's raw payloads; returns how many raw files the bag holds. */
async function addProvenance(payload: Payload, input: StudyBagInput): Promise<number> {
  const { study } = input.study;
  let rawFiles = 0;
  await payload.add(memoryFile(`data/${PROVENANCE_DIR}/runs.json`, runsJson(input.runs, study)));
  for (const run of input.runs) {
    const linkIds = new Set(
      run.manifest.studies.filter((s) => s.study_id === study.study_id).map((s) => s.link_id),
    );
    const keep = (record: { study_id?: unknown; link_id?: unknown }) =>
      record.study_id === study.study_id ||
      (record.study_id === undefined && typeof record.link_id === 'string' && linkIds.has(record.link_id));
    for (const raw of input.study.rawFiles(run)) {
      const path = `${PROVENANCE_DIR}/raw/${nameOf(run.id)}/${raw.path.slice('raw/'.length)}`;
      const local = join(input.scratch, path);
      if ((await filterRaw(run, raw.path, keep, local)) > 0) {
        await payload.add(await diskFile(`data/${path}`, local));
        rawFiles += 1;
      }
    }
  }
  return rawFiles;
}

function bagInfo(input: StudyBagInput): [string, string][] {
  const { study } = input.study;
  const fields: [string, string][] = [];
  if (input.info.source_organization) fields.push(['Source-Organization', input.info.source_organization]);
  if (input.info.contact_name) fields.push(['Contact-Name', input.info.contact_name]);
  if (input.info.contact_email) fields.push(['Contact-Email', input.info.contact_email]);
  fields.push(
    ['External-Identifier', study.study_id],
    ['External-Description', `${study.title} (link_id ${study.link_id})`],
    ['Bagging-Date', input.time.toISOString().slice(0, 10)],
    ['Bag-Software-Agent', `${input.tool.name} ${input.tool.version}`],
    ['Privacy', privacySummary(input.study.privacy, { recordings: true })],
  );
  return fields;
}
