/**
 * A run's raw/ folder answering the three calls as the service answered them, so a replay
 * goes through the same extract, transform and load code as `run` (and so the same rules:
 * validation, keep-newest, rejects) without a copy of any of them.
 *
 * Payloads are not held in memory: each raw file is unpacked once into a temporary JSONL file
 * and indexed by (study, page) or (study, response); a call reads its one line back, through
 * one handle per file kept open for the replay (an open and a close per call cost more than
 * the read). A line's payload comes back as the bytes it was stored as, read as the live client
 * reads a body (a listing page element by element), so the rest of the run takes the same paths
 * as an export: raw/ stores those bytes again, the page digest hashes them.
 */
import { createReadStream, readSync } from 'node:fs';
import { type FileHandle, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import pLimit from 'p-limit';
import type { ApiClient, Fetched, ListResponsesQuery } from '../api/client.ts';
import { ApiCounters } from '../api/counters.ts';
import { type JsonArrayElements, splitJsonArray } from '../api/json-array.ts';
import type { Operation } from '../api/resources.ts';
import { HttpError, RunError } from '../errors.ts';
import { parseRecordHead, payloadKey, type RecordHead } from '../load/raw.ts';
import type { RawRecord } from '../records.ts';
import { openLocalFile } from '../storage/local-file.ts';

export interface RecordedSource {
  client: ApiClient;
  /** Permanent ids of the studies whose responses the recorded run listed, in list order. */
  studyIds: string[];
  close(): Promise<void>;
}

interface Line {
  offset: number;
  length: number;
}

interface UnpackedFile {
  path: string;
  /** The raw file it was unpacked from, as messages name it. */
  source: string;
  /** Open for reading the replay long; closed by the source's close(). */
  handle: FileHandle;
  /**
   * The records of each key in the order received: a listing page asked again (a list that
   * moved while it was paged, src/extract/listing-passes.ts) is answered by its next record,
   * anything else by its first.
   */
  lines: Map<string, Line[]>;
  /** Requests answered per key so far. */
  asked: Map<string, number>;
  studyIds: string[];
}

const operations: Operation[] = ['list_surveys', 'list_responses', 'get_response'];

export async function openRecordedSource(rawDir: string, baseUrl: string): Promise<RecordedSource> {
  const dir = await mkdtemp(join(tmpdir(), 'study-export-replay-'));
  const files = new Map<Operation, UnpackedFile>();
  const close = async () => {
    await Promise.all([...files.values()].map((file) => file.handle.close()));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (const operation of operations) {
      const unpacked = await unpack(rawDir, operation, join(dir, `${operation}.jsonl`));
      files.set(operation, { ...unpacked, handle: await open(unpacked.path, 'r') });
    }
    return {
      client: new RecordedClient(baseUrl, files),
      studyIds: files.get('list_responses')?.studyIds ?? [],
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The key a record answers: the call's own arguments. */
function keyOf(record: RecordHead): string {
  switch (record.operation) {
    case 'list_surveys':
      return '';
    case 'list_responses':
      return `${record.link_id}\u0000${record.page}`;
    case 'get_response':
      return `${record.link_id}\u0000${record.response_id}`;
  }
}

async function unpack(
  rawDir: string,
  operation: Operation,
  path: string,
): Promise<Omit<UnpackedFile, 'handle'>> {
  const source = join(rawDir, `${operation}.jsonl.gz`);
  const unpacked = {
    path,
    source,
    lines: new Map<string, Line[]>(),
    asked: new Map<string, number>(),
    studyIds: [] as string[],
  };
  const input = createReadStream(source);
  const missing = await new Promise<boolean>((resolve) => {
    input.once('open', () => resolve(false));
    input.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ENOENT'));
  });
  const sink = await openLocalFile(path);
  let offset = 0;
  try {
    if (missing) return unpacked;
    const seenStudies = new Set<string>();
    for await (const text of createInterface({ input: input.pipe(createGunzip()), crlfDelay: Infinity })) {
      if (text === '') continue;
      const record = lineHead(text, source);
      const length = Buffer.byteLength(text) + 1;
      const key = keyOf(record);
      // A study list read again replaces the first; a response asked again (renewed links) does
      // not; a listing page read again comes after the first.
      const line = { offset, length };
      const earlier = unpacked.lines.get(key);
      if (earlier === undefined || operation === 'list_surveys') unpacked.lines.set(key, [line]);
      else if (operation === 'list_responses') earlier.push(line);
      if (record.study_id !== undefined && !seenStudies.has(record.study_id)) {
        seenStudies.add(record.study_id);
        unpacked.studyIds.push(record.study_id);
      }
      await sink.write(`${text}\n`);
      offset += length;
    }
    return unpacked;
  } finally {
    await sink.close();
  }
}

/** What a line answers: its keys before the payload, parsed alone when the line has the usual shape. */
function lineHead(text: string, file: string): RecordHead {
  const at = text.indexOf(payloadKey);
  return (at < 0 ? null : parseRecordHead(text.slice(0, at))) ?? parseRecord(text, file);
}

function parseRecord(text: string, file: string): RawRecord {
  try {
    return JSON.parse(text) as RawRecord;
  } catch (cause) {
    throw new RunError(`${file}: a line is not JSON; raw/ is damaged`, { context: { file }, cause });
  }
}

class RecordedClient implements ApiClient {
  readonly counters = new ApiCounters(1);
  readonly limit = pLimit(8);

  constructor(
    readonly baseUrl: string,
    private readonly files: Map<Operation, UnpackedFile>,
  ) {}

  listStudies(): Promise<Fetched> {
    return this.answer('list_surveys', '', 'the study list');
  }

  listResponses(linkId: string, query: ListResponsesQuery): Promise<Fetched> {
    return this.answer(
      'list_responses',
      `${linkId}\u0000${query.page}`,
      `page ${query.page} of study "${linkId}"`,
    );
  }

  getResponse(linkId: string, responseId: string): Promise<Fetched> {
    return this.answer(
      'get_response',
      `${linkId}\u0000${responseId}`,
      `response "${responseId}" of study "${linkId}"`,
    );
  }

  close(): void {}

  /** The recorded answer; a call the run never made (or that failed) is a 404 for that call alone. */
  private async answer(operation: Operation, key: string, what: string): Promise<Fetched> {
    const file = this.files.get(operation);
    const line = file && nextLine(file, key);
    if (!file || !line) {
      throw new HttpError('E_NOT_FOUND', `raw/ holds no ${operation} answer for ${what}`, {
        context: { operation },
      });
    }
    const buffer = Buffer.allocUnsafe(line.length);
    // Synchronous: a few kilobytes of a file just written (in the page cache), where the
    // thread pool's round trip costs more than the read.
    const bytesRead = readSync(file.handle.fd, buffer, 0, line.length, line.offset);
    if (bytesRead !== line.length) {
      throw new RunError(
        `${file.path}: ${bytesRead} of ${line.length} bytes read back; the replay's scratch is damaged`,
        {
          context: { file: file.path },
        },
      );
    }
    // Without its line end.
    const text = buffer.subarray(0, line.length - 1);
    const answer =
      splitAnswer(operation, text) ??
      received(parseRecord(text.toString('utf8'), `${file.source} (${what})`));
    this.counters.recordAttempt(operation, answer.status, 0, line.length);
    return { ...answer, bytes: line.length };
  }
}

/** The record answering the next request for `key`: the nth request the nth record, then the last. */
function nextLine(file: UnpackedFile, key: string): Line | undefined {
  const lines = file.lines.get(key);
  if (lines === undefined) return undefined;
  const asked = file.asked.get(key) ?? 0;
  file.asked.set(key, asked + 1);
  return lines[Math.min(asked, lines.length - 1)];
}

const closingBrace = 0x7d;

/**
 * A line of the usual shape (payloadKey, then the payload, then the record's closing brace)
 * read as the live client reads a body; null when it is not of that shape or its payload is not
 * JSON (the caller then parses the line whole).
 */
function splitAnswer(operation: Operation, line: Buffer): Omit<Fetched, 'bytes'> | null {
  const at = line.indexOf(payloadKey);
  if (at < 0 || line[line.length - 1] !== closingBrace) return null;
  const head = parseRecordHead(line.toString('utf8', 0, at));
  if (!head) return null;
  const bytes = line.subarray(at + payloadKey.length, line.length - 1);
  const body = readPayload(operation, bytes);
  return body && { ...received(head), ...body, json: { bytes, of: body.payload } };
}

/** As the live client reads a body: a listing page element by element, anything else whole. */
function readPayload(
  operation: Operation,
  bytes: Buffer,
): { payload: unknown; elements?: JsonArrayElements } | null {
  const elements = operation === 'list_responses' ? splitJsonArray(bytes) : null;
  if (elements) return { payload: undefined, elements };
  try {
    return { payload: JSON.parse(bytes.toString('utf8')) };
  } catch {
    return null;
  }
}

/** A recorded answer's fields besides its payload. */
function received(record: RecordHead & { payload?: unknown }): Omit<Fetched, 'bytes' | 'elements' | 'json'> {
  return {
    payload: record.payload,
    url: record.url,
    ...(record.query === undefined ? {} : { query: record.query }),
    status: record.status,
    receivedAt: record.received_at,
  };
}
