/**
 * The sandbox: a faithful local Study Responses service (spec section 4) on three loopback
 * listeners (api, storage for audio, stream for video), with signed media, faults, a
 * request log and controls for tests. See dataset.ts for the data set and its choices.
 */
import type { ListedResponse, Study } from '../api/resources.ts';
import { ConfigError } from '../errors.ts';
import { untilStopped } from '../util/signals.ts';
import { type ApiContext, apiHandler, listItemOf, mutationKey, type ResponseOrder } from './api.ts';
import { type Clock, createClock } from './clock.ts';
import { DataSet, type Modality, type StudyRecord } from './dataset.ts';
import type { ResponseDeletion } from './deletions.ts';
import { FaultDice, type FaultSpec, noFaults, parseFaults } from './faults.ts';
import { loadMedia, mediaLinker, storageHandler, streamHandler } from './media.ts';
import { stableHex } from './prng.ts';
import {
  type Listener,
  type ListenerSetup,
  type OverrideMatch,
  type OverrideReply,
  Overrides,
  RequestLog,
  type RequestLogEntry,
  startListener,
} from './server.ts';
import { UrlSigner } from './signing.ts';
import {
  addChange,
  noChanges,
  questionsOf,
  type SchemaChangeOption,
  type StudySchemaChange,
} from './study-schema.ts';

export type { FaultRates, FaultSpec } from './faults.ts';
export type { StudySchemaChange } from './study-schema.ts';
export type { RequestLogEntry };
export { parseFaults };

export interface SandboxOptions {
  /** Default 7; the data set is a deterministic function of seed, studies, responses. */
  seed?: number;
  /** Default 6 (a mix of text-only, audio and video studies). */
  studies?: number;
  /** Responses per study, default 25. */
  responses?: number;
  /** Extra latency on every API request. */
  latencyMs?: number;
  /** e.g. "5xx=0.1,429=0.05,reset=0.02,truncate=0.02,latency=20ms" (see faults.ts). */
  faults?: string;
  /** Default 1000; larger per_page requests are silently capped. */
  maxPerPage?: number;
  /**
   * What the response list is sorted by, ascending: created_at (the default, dataset.ts) or
   * updated_at, as a service may sort it. By updated_at, a response edited while a client pages
   * the list moves to its end, and every later one moves back one place.
   */
  responseOrder?: ResponseOrder;
  /** Default 1; multiplies media sizes (for benchmarks). */
  mediaScale?: number;
  /** Path of a JSON-lines request log file. */
  requestLog?: string;
  /** API port; 0 (default) = a free port. storage/stream always pick free ports. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /**
   * Initial clock value in epoch ms; default Date.now(). The clock dates what the sandbox
   * creates and signs, and is its Date header: set apart from now, it is a service whose
   * clock is off.
   */
  startTime?: number;
  /**
   * Schema changes made as the sandbox starts (`--schema-change`), each followed by a response
   * to its study, so that an incremental run against it sees them.
   */
  schemaChanges?: SchemaChangeOption[];
  /** Responses deleted as the sandbox starts (`--delete-responses`), as the service would. */
  deleteResponses?: ResponseDeletion[];
}

export interface AddStudySpec {
  link_id: string;
  title?: string;
  modality?: Modality;
  responses?: number;
  responseIds?: string[];
}

export interface Sandbox {
  base_url: string;
  api_key: string;
  storage_url: string;
  stream_url: string;
  /**
   * Two keys seeing different, overlapping sets of studies (api_key === keys.primary), and one
   * that sees every study (the one `study-export sandbox` prints).
   */
  keys: { primary: string; secondary: string; all: string };
  /** The signing/expiry clock. */
  clock: Clock;
  /** In-memory copy of the request log. */
  requests: RequestLogEntry[];
  /** Changes faults at runtime (null = none). */
  setFaults(spec: string | null): void;
  /** The list payload that key sees (default: the primary key). */
  studies(apiKey?: string): Study[];
  /** Every response of the study, by created_at (unpaged, include_in_progress=true). */
  responses(linkId: string): ListedResponse[];
  renameStudy(linkIdOrId: string, newLinkId: string): void;
  /** Moves updated_at (default: clock.now()). */
  touchResponse(linkId: string, responseId: string, at?: Date): void;
  /** Returns the new response id; its created_at and updated_at are the clock's now. */
  addResponse(linkId: string): string;
  /** The response is gone from the list, its detail is a 404 and desc counts one less. */
  deleteResponse(linkId: string, responseId: string): void;
  /** The study is gone from every key's study list; its responses' list and details are 404s. */
  deleteStudy(linkIdOrId: string): void;
  addStudy(spec: AddStudySpec): Study;
  /** Serve fn(item) instead of the list item (malformed-payload tests). */
  mutateListItem(linkId: string, responseId: string, fn: (item: Record<string, unknown>) => unknown): void;
  mutateDetail(linkId: string, responseId: string, fn: (detail: Record<string, unknown>) => unknown): void;
  /**
   * Changes the study's schema as the service would (study-schema.ts): a question slot added or
   * reworded and a URL parameter added apply to the responses added after it; a field set is
   * in every payload of its place from now on.
   */
  changeSchema(linkIdOrId: string, change: StudySchemaChange): void;
  /** Answer the next `times` (default 1) matching requests with `reply`. */
  overrideNext(match: OverrideMatch, reply: OverrideReply, times?: number): void;
  close(): Promise<void>;
}

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const seed = options.seed ?? 7;
  const studies = nonNegativeInt(options.studies ?? 6, 'studies');
  const responses = nonNegativeInt(options.responses ?? 25, 'responses');
  const maxPerPage = positiveInt(options.maxPerPage ?? 1000, 'maxPerPage');
  const mediaScale = options.mediaScale ?? 1;
  if (!(mediaScale > 0)) throw new ConfigError(`sandbox: mediaScale must be positive, got ${mediaScale}`);
  const host = options.host ?? '127.0.0.1';
  let faults: FaultSpec = options.faults ? parseFaults(options.faults) : noFaults();

  const clock = createClock(options.startTime ?? Date.now());
  const data = new DataSet({ seed, studies, responses }, clock);
  const signer = new UrlSigner(clock);
  const bodies = loadMedia(mediaScale);
  const keys = {
    primary: `sbx-primary-${stableHex(24, seed, 'key', 'primary')}`,
    secondary: `sbx-secondary-${stableHex(24, seed, 'key', 'secondary')}`,
    all: `sbx-all-${stableHex(24, seed, 'key', 'all')}`,
  };
  const log = new RequestLog(options.requestLog);
  const shared = { log, overrides: new Overrides(), faults: () => faults, now: () => clock.now() };
  const urls = { storage: '', stream: '' };
  const context: ApiContext = {
    data,
    keys,
    maxPerPage,
    responseOrder: options.responseOrder ?? 'created_at',
    media: () => mediaLinker(signer, urls.storage, urls.stream),
    listMutations: new Map(),
    detailMutations: new Map(),
  };

  const listeners: Listener[] = [];
  try {
    // Storage (audio) and stream (video) differ only in what they serve.
    const mediaListener = async (name: 'storage' | 'stream', handle: ListenerSetup['handle']) => {
      const listener = await startListener(
        { name, handle, dice: new FaultDice(seed, name), rates: (f) => f.media, baseLatencyMs: 0 },
        shared,
        host,
        0,
      );
      listeners.push(listener);
      return listener;
    };
    const storage = await mediaListener('storage', storageHandler(signer, bodies));
    const stream = await mediaListener('stream', streamHandler(signer, bodies));
    urls.storage = storage.url;
    urls.stream = stream.url;
    const api = await startListener(
      {
        name: 'api',
        handle: apiHandler(context),
        dice: new FaultDice(seed, 'api'),
        rates: (f) => f.api,
        baseLatencyMs: options.latencyMs ?? 0,
      },
      shared,
      host,
      options.port ?? 0,
    );
    listeners.push(api);

    const controls = dataControls(data, context, clock, keys);
    // Each changed study gets one respondent after its changes.
    const changed = new Set<string>();
    for (const { study, change } of options.schemaChanges ?? []) {
      const target = study ?? data.visibleStudies('primary')[0]?.linkId ?? '';
      controls.changeSchema(target, change);
      changed.add(data.byLinkIdOrId(target)?.linkId ?? target);
    }
    for (const linkId of changed) controls.addResponse(linkId);
    for (const { study, count } of options.deleteResponses ?? []) {
      const target = study ?? data.visibleStudies('primary')[0]?.linkId ?? '';
      for (const response of controls.responses(target).slice(0, count)) {
        controls.deleteResponse(target, response.id);
      }
    }
    return {
      base_url: api.url,
      api_key: keys.primary,
      storage_url: storage.url,
      stream_url: stream.url,
      keys,
      clock,
      requests: log.entries,
      setFaults(spec) {
        faults = spec ? parseFaults(spec) : noFaults();
      },
      ...controls,
      overrideNext(match, reply, times = 1) {
        shared.overrides.add(match, reply, times);
      },
      async close() {
        await Promise.all(listeners.map((listener) => listener.close()));
        await log.close();
      },
    };
  } catch (error) {
    await Promise.all(listeners.map((listener) => listener.close()));
    await log.close();
    throw error;
  }
}

/** What a test does to the sandbox's data: read it as served, rename, touch, add, delete, mutate. */
function dataControls(
  data: DataSet,
  context: ApiContext,
  clock: Clock,
  keys: Sandbox['keys'],
): Pick<
  Sandbox,
  | 'studies'
  | 'responses'
  | 'renameStudy'
  | 'touchResponse'
  | 'addResponse'
  | 'deleteResponse'
  | 'deleteStudy'
  | 'addStudy'
  | 'mutateListItem'
  | 'mutateDetail'
  | 'changeSchema'
> {
  const study = (linkIdOrId: string): StudyRecord => {
    const found = data.byLinkIdOrId(linkIdOrId);
    if (!found) throw new Error(`sandbox: no study with link_id or id "${linkIdOrId}"`);
    return found;
  };
  const entryOf = (linkId: string, responseId: string) => {
    const record = study(linkId);
    const entry = record.byId.get(responseId);
    if (!entry) throw new Error(`sandbox: study "${linkId}" has no response "${responseId}"`);
    return { record, entry };
  };
  return {
    studies(apiKey = keys.primary) {
      const key = (['primary', 'secondary', 'all'] as const).find((name) => keys[name] === apiKey);
      if (!key) return [];
      return data.visibleStudies(key).map((record) => data.studyPayload(record));
    },
    responses(linkId) {
      const record = study(linkId);
      return record.entries.map((entry) => listItemOf(context, record, entry) as ListedResponse);
    },
    renameStudy(linkIdOrId, newLinkId) {
      if (data.byLinkId(newLinkId)) throw new Error(`sandbox: link_id "${newLinkId}" is already taken`);
      study(linkIdOrId).linkId = newLinkId;
    },
    touchResponse(linkId, responseId, at) {
      entryOf(linkId, responseId).entry.updatedMs = at ? at.getTime() : clock.now();
    },
    addResponse(linkId) {
      return data.addResponse(study(linkId)).id;
    },
    deleteResponse(linkId, responseId) {
      const { record, entry } = entryOf(linkId, responseId);
      record.entries.splice(record.entries.indexOf(entry), 1);
      record.byId.delete(entry.id);
    },
    deleteStudy(linkIdOrId) {
      const record = study(linkIdOrId);
      data.studies.splice(data.studies.indexOf(record), 1);
    },
    addStudy(spec) {
      if (data.byLinkId(spec.link_id)) throw new Error(`sandbox: link_id "${spec.link_id}" is already taken`);
      return data.studyPayload(data.addStudy(spec));
    },
    mutateListItem(linkId, responseId, fn) {
      const { record, entry } = entryOf(linkId, responseId);
      context.listMutations.set(mutationKey(record, entry.id), fn);
    },
    mutateDetail(linkId, responseId, fn) {
      const { record, entry } = entryOf(linkId, responseId);
      context.detailMutations.set(mutationKey(record, entry.id), fn);
    },
    changeSchema(linkIdOrId, change) {
      const record = study(linkIdOrId);
      record.changes ??= noChanges();
      addChange(record.changes, change, record.nextIndex);
      try {
        questionsOf(record.questions, record.changes, record.nextIndex);
      } catch (error) {
        record.changes.questions.pop();
        throw error;
      }
    },
  };
}

/**
 * The `study-export sandbox` command: starts the sandbox, prints one JSON line with its
 * addresses and key first, and stops cleanly on SIGINT/SIGTERM.
 */
export async function runSandboxCommand(
  options: SandboxOptions,
  /** Printed after the first line, e.g. a pipeline file for this sandbox. */
  after?: (served: { base_url: string }) => string,
): Promise<void> {
  const sandbox = await startSandbox(options);
  const { base_url, storage_url, stream_url } = sandbox;
  // The key a person is given sees every study the sandbox serves.
  const api_key = sandbox.keys.all;
  process.stdout.write(`${JSON.stringify({ base_url, api_key, storage_url, stream_url })}\n`);
  if (after) process.stdout.write(after({ base_url }));
  await untilStopped();
  await sandbox.close();
}

function nonNegativeInt(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new ConfigError(`sandbox: ${name} must be a non-negative integer, got ${value}`);
  return value;
}

function positiveInt(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1)
    throw new ConfigError(`sandbox: ${name} must be a positive integer, got ${value}`);
  return value;
}
