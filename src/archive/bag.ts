/**
 * One study's bag: its payload under data/ written file by file into the sink (tables, sheets,
 * recordings, conversations, index, guide, provenance), then the tag files. Nothing is fetched
 * from the service: the bag holds what the output holds, and says what it lacks.
 */
import { appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { dataPackage } from '../load/datapackage.ts';
import { nameOf } from '../names.ts';
import { csvText } from '../output/formats/csv.ts';
import { privacySummary } from '../privacy/index.ts';
import {
  byResponse,
  type HandoffStudy,
  type OutputReader,
  type RunReader,
  studyTables,
} from '../reader/index.ts';
import { redact } from '../redact.ts';
import type { Row, TableRows } from '../tables/index.ts';
import type { Conversation, TurnRecording } from './conversation.ts';
import { conversationText } from './conversation.ts';
import {
  conversationPage,
  type GuideFacts,
  indexEnd,
  indexSection,
  indexStart,
  readme,
  report,
} from './guide.ts';
import { addTables, diskFile, memoryFile, Payload, sheetHeader, storedFile } from './payload.ts';
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
  output: OutputReader;
  /** The study as the bag carries it: through the handoff reader, de-identified by its profile or identified. */
  study: HandoffStudy;
  /** The runs that exported the study, oldest first. */
  runs: readonly RunReader[];
  sink: BagSink;
  /** A local folder of the bag's own, for files written before they are added. */
  scratch: string;
  info: BagInfoSettings;
  tool: { name: string; version: string };
  escapeFormulae: boolean;
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
  const payload = new Payload(input.sink);
  const rows = await studyTables(input.study);
  const tableFiles = await addTables(payload, rows, input.scratch, input.escapeFormulae);
  const sheets = await addSheets(payload, input);
  const planned = await addRecordings(payload, input.study, input.scratch);
  const conversations = conversationsOf(rows, planned);
  const newest = input.runs.at(-1);
  const facts: GuideFacts = {
    pipeline: input.output.name,
    service: redact(newest?.manifest.config?.source?.base_url ?? ''),
    runId: newest?.id ?? '',
    baggedAt: input.time.toISOString(),
    studyRows: rows,
    recordings: planned.length,
    missing: planned.filter((p) => !p.path).length,
    privacy: input.study.privacy,
    sheets: sheets.wide.length + sheets.workbooks.length,
    rawFiles: 0,
  };
  await addConversations(payload, input, facts, conversations);
  await addRecordingList(payload, input.scratch, planned);
  facts.rawFiles = await addProvenance(payload, input);
  await payload.add(memoryFile('data/README.md', readme(facts)));
  await payload.add(memoryFile('data/report.html', report(facts)));
  const descriptor = dataPackage({
    name: `${input.output.name}-${rows.studies[0]?.link_id ?? ''}`,
    title: rows.studies[0]?.title ?? '',
    description: `One study exported by study-export: ${facts.studyRows.responses.length} responses. Privacy: ${privacySummary(input.study.privacy, { recordings: true })} (see privacy).`,
    created: facts.baggedAt,
    tables: tableFiles.map((file) => ({ ...file, ...digestFields(payload, file.path) })),
    sheets: sheets.wide.map((sheet) => ({ ...sheet, ...digestFields(payload, sheet.path) })),
    files: [...sheets.workbooks, 'recordings.csv', 'index.html', 'README.md', 'report.html'].map((path) => ({
      path,
      ...digestFields(payload, path),
    })),
  });
  const described = { ...descriptor, privacy: input.study.privacy };
  await payload.add(memoryFile('data/datapackage.json', `${JSON.stringify(described, null, 2)}\n`));
  await writeTagFiles(input.sink, payload.written, bagInfo(input));
  return {
    location: input.sink.location,
    responseIds: rows.responses.map((response) => response.response_id),
    files: payload.written.length,
    bytes: payload.written.reduce((sum, file) => sum + file.digests.bytes, 0),
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

function digestFields(payload: Payload, path: string): { bytes?: number; sha256?: string } {
  const digests = payload.digestsOf(path);
  return digests ? { bytes: digests.bytes, sha256: digests.sha256 } : {};
}

/** The study's wide sheet and workbook as current/ holds them, byte for byte. */
async function addSheets(payload: Payload, input: StudyBagInput) {
  const { storage } = input.output;
  const current = await input.study.currentSheets();
  const wide: { path: string; header: string[]; bom: boolean }[] = [];
  for (const sheet of current.wide) {
    const path = `wide/${sheet.path.split('/').at(-1)}`;
    const { header, bom } = await sheetHeader(storage, sheet.path, sheet.bytes);
    await payload.add(storedFile(`data/${path}`, storage, sheet.path, sheet.bytes));
    wide.push({ path, header, bom });
  }
  const workbooks: string[] = [];
  for (const book of current.workbooks) {
    const path = `xlsx/${book.path.split('/').at(-1)}`;
    await payload.add(storedFile(`data/${path}`, storage, book.path, book.bytes));
    workbooks.push(path);
  }
  // The study's files of the other study formats (sav, dta): current/<folder>/study_id=<id>/<name>.
  for (const file of current.others ?? []) {
    const parts = file.path.split('/');
    const path = `${parts.at(-3)}/${parts.at(-1)}`;
    await payload.add(storedFile(`data/${path}`, storage, file.path, file.bytes));
    workbooks.push(path);
  }
  return { wide, workbooks };
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

/** Responses in the order people number them; each with its rows and recordings. */
function conversationsOf(rows: TableRows, planned: readonly PlannedRecording[]): Conversation[] {
  const transcript = byResponse(rows.transcript);
  const answers = byResponse(rows.answers);
  const attributes = byResponse(rows.attributes);
  const recordings = byResponse(planned.map((p) => ({ response_id: p.recording.response_id, plan: p })));
  const responses = [...rows.responses].sort(
    (a, b) =>
      (a.response_number ?? Number.MAX_SAFE_INTEGER) - (b.response_number ?? Number.MAX_SAFE_INTEGER) ||
      a.created_at.localeCompare(b.created_at) ||
      a.response_id.localeCompare(b.response_id),
  );
  return responses.map((response) => ({
    response,
    name: nameOf(response.response_id),
    transcript: transcript.get(response.response_id) ?? [],
    answers: new Map((answers.get(response.response_id) ?? []).map((a) => [a.answer_id, a])),
    attributes: attributes.get(response.response_id) ?? [],
    recordings: (recordings.get(response.response_id) ?? []).map(
      ({ plan }): TurnRecording => ({
        turn: plan.recording.turn,
        kind: plan.recording.kind,
        file: plan.path,
        copy: plan.copyPath,
        note: plan.note,
      }),
    ),
  }));
}

/** Each conversation's page and text, and index.html, written to scratch a conversation at a time. */
async function addConversations(
  payload: Payload,
  input: StudyBagInput,
  facts: GuideFacts,
  conversations: readonly Conversation[],
): Promise<void> {
  const title = input.study.study.title;
  const index = join(input.scratch, 'index.html');
  await writeFile(index, indexStart(facts, conversations));
  for (const conversation of conversations) {
    const base = `data/conversations/${conversation.name}`;
    await payload.add(memoryFile(`${base}.html`, conversationPage(conversation, title)));
    await payload.add(memoryFile(`${base}.txt`, conversationText(conversation, title)));
    await appendFile(index, indexSection(conversation));
  }
  await appendFile(index, indexEnd);
  await payload.add(await diskFile('data/index.html', index));
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
  const records = planned.map(({ recording, path, copyPath, note }) => {
    const found = 'reason' in recording.located ? null : recording.located;
    const row: Row<'media'> | null = found?.row ?? recording.row;
    return [
      recording.response_id,
      recording.turn,
      recording.kind,
      path ? 'yes' : 'no',
      path,
      path ? (payload.digestsOf(path)?.bytes ?? null) : null,
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
  await payload.add(await diskFile('data/recordings.csv', local));
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
