/**
 * The API listener: the three GET operations of spec section 4, with the x-api-key header.
 * Path segments are split on the raw path and then percent-decoded one by one, so ids that
 * contain "/" arrive as %2F and still route.
 */
import type { IncomingMessage } from 'node:http';
import type { DataSet, KeyName, MediaLinker, ResponseEntry, StudyRecord } from './dataset.ts';
import { jsonReply, type Reply } from './server.ts';
import { splitTarget } from './signing.ts';

/** What the response list is sorted by, ascending (SandboxOptions.responseOrder). */
export type ResponseOrder = 'created_at' | 'updated_at';

export interface ApiContext {
  data: DataSet;
  keys: Record<KeyName, string>;
  maxPerPage: number;
  responseOrder: ResponseOrder;
  media: () => MediaLinker;
  listMutations: Map<string, (item: Record<string, unknown>) => unknown>;
  detailMutations: Map<string, (detail: Record<string, unknown>) => unknown>;
}

export const DEFAULT_PER_PAGE = 1000;

export function mutationKey(study: StudyRecord, responseId: string): string {
  return `${study.id}\u0000${responseId}`;
}

export function apiHandler(context: ApiContext): (target: string, request: IncomingMessage) => Reply {
  return (target, request) => {
    const [rawPath, search] = splitTarget(target);
    const [root, api, visibility, ...rest] = decodeSegments(rawPath) ?? [];
    if (root !== '' || api !== 'api' || visibility !== 'public')
      return jsonReply(404, { error: 'not found' });
    const key = keyName(context, request.headers['x-api-key']);
    if (request.headers['x-api-key'] === undefined)
      return jsonReply(401, { error: 'missing x-api-key header' });
    if (!key) return jsonReply(401, { error: 'invalid API key' });
    if (rest.length === 1 && rest[0] === 'list_surveys') {
      return jsonReply(
        200,
        context.data.visibleStudies(key).map((study) => context.data.studyPayload(study)),
      );
    }
    if (rest[0] === 'responses' && (rest.length === 2 || rest.length === 3)) {
      const study = findVisibleStudy(context, key, rest[1] ?? '');
      if (!study) return jsonReply(404, { error: 'study not found' });
      if (rest.length === 2) return listResponses(context, study, new URLSearchParams(search));
      return getResponse(context, study, rest[2] ?? '');
    }
    return jsonReply(404, { error: 'not found' });
  };
}

function decodeSegments(rawPath: string): string[] | undefined {
  try {
    return rawPath.split('/').map((segment) => decodeURIComponent(segment));
  } catch {
    return undefined;
  }
}

function keyName(context: ApiContext, header: string | string[] | undefined): KeyName | undefined {
  if (header === context.keys.primary) return 'primary';
  if (header === context.keys.secondary) return 'secondary';
  if (header === context.keys.all) return 'all';
  return undefined;
}

function findVisibleStudy(context: ApiContext, key: KeyName, linkId: string): StudyRecord | undefined {
  const study = linkId === '' ? undefined : context.data.byLinkId(linkId);
  return study && (key === 'all' || study.visibleTo.has(key)) ? study : undefined;
}

interface ListQuery {
  page: number;
  perPage: number;
  updatedSinceMs: number | undefined;
  includeInProgress: boolean;
}

class BadParameter extends Error {
  constructor(
    readonly parameter: string,
    readonly expected: string,
  ) {
    super(`invalid ${parameter}: ${expected}`);
  }
}

function listResponses(context: ApiContext, study: StudyRecord, params: URLSearchParams): Reply {
  let query: ListQuery;
  try {
    query = parseListQuery(params, context.maxPerPage);
  } catch (error) {
    if (error instanceof BadParameter) {
      return jsonReply(400, { error: error.message, parameter: error.parameter });
    }
    throw error;
  }
  const page = selectEntries(study, query, context.responseOrder);
  return jsonReply(
    200,
    page.map((entry) => listItemOf(context, study, entry)),
  );
}

/** The entries the list serves for one query, in paging order (entries are kept by created_at). */
function selectEntries(study: StudyRecord, query: ListQuery, order: ResponseOrder): ResponseEntry[] {
  const since = query.updatedSinceMs;
  const kept = study.entries.filter(
    (entry) =>
      (query.includeInProgress || !entry.inProgress) && (since === undefined || entry.updatedMs > since),
  );
  if (order === 'updated_at')
    kept.sort((a, b) => a.updatedMs - b.updatedMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const start = query.page * query.perPage;
  return kept.slice(start, start + query.perPage);
}

export function listItemOf(context: ApiContext, study: StudyRecord, entry: ResponseEntry): unknown {
  const item = context.data.listItem(study, entry);
  const mutate = context.listMutations.get(mutationKey(study, entry.id));
  return mutate ? mutate(item) : item;
}

function getResponse(context: ApiContext, study: StudyRecord, responseId: string): Reply {
  const entry = study.byId.get(responseId);
  if (!entry) return jsonReply(404, { error: 'response not found' });
  const detail = context.data.detail(study, entry, context.media());
  const mutate = context.detailMutations.get(mutationKey(study, entry.id));
  return jsonReply(200, mutate ? mutate(detail) : detail);
}

function parseListQuery(params: URLSearchParams, maxPerPage: number): ListQuery {
  const page = params.has('page') ? parseCount(params.get('page') ?? '', 'page', 0) : 0;
  const perPage = params.has('per_page')
    ? parseCount(params.get('per_page') ?? '', 'per_page', 1)
    : DEFAULT_PER_PAGE;
  return {
    page,
    // Larger requests are capped silently, as real services do.
    perPage: Math.min(perPage, maxPerPage),
    updatedSinceMs: params.has('updated_since') ? parseInstant(params.get('updated_since') ?? '') : undefined,
    includeInProgress: params.has('include_in_progress')
      ? parseBoolean(params.get('include_in_progress') ?? '')
      : true,
  };
}

function parseCount(value: string, parameter: string, min: number): number {
  const number = /^\d{1,15}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(number) || number < min) {
    throw new BadParameter(
      parameter,
      min === 0 ? 'expected a non-negative integer' : 'expected a positive integer',
    );
  }
  return number;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|z|[+-]\d{2}:?\d{2})?$/;

/** A date (midnight UTC) or a timestamp; no offset means UTC. */
function parseInstant(raw: string): number {
  // An unencoded "+02:00" in a query string arrives as " 02:00" (curl users do this).
  const value = raw.replace(/(T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?) (\d{2}:?\d{2})$/, '$1+$2');
  const expected = 'expected an ISO 8601 date or timestamp, e.g. 2025-03-01 or 2025-03-01T12:00:00Z';
  if (DATE.test(value)) {
    const ms = Date.parse(`${value}T00:00:00Z`);
    if (Number.isNaN(ms)) throw new BadParameter('updated_since', expected);
    return ms;
  }
  if (!TIMESTAMP.test(value)) throw new BadParameter('updated_since', expected);
  let normalized = value.replace(' ', 'T').replace(/z$/, 'Z');
  // Keep milliseconds: the data set's timestamps have millisecond precision.
  normalized = normalized.replace(/(\.\d{3})\d+/, '$1');
  normalized = normalized.replace(/([+-]\d{2})(\d{2})$/, '$1:$2');
  if (!/(Z|[+-]\d{2}:\d{2})$/.test(normalized)) normalized += 'Z';
  const ms = Date.parse(normalized);
  if (Number.isNaN(ms)) throw new BadParameter('updated_since', expected);
  return ms;
}

function parseBoolean(value: string): boolean {
  const lower = value.toLowerCase();
  if (lower === 'true' || lower === '1') return true;
  if (lower === 'false' || lower === '0') return false;
  throw new BadParameter('include_in_progress', 'expected true or false');
}
