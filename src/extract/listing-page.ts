/**
 * One page of a study's listing (spec 4.2): fetched, kept for raw/, and its elements checked
 * one at a time, each let go once checked, so the page is never whole in memory.
 */
import { createHash } from 'node:crypto';
import type { ApiClient, Fetched } from '../api/client.ts';
import type { JsonArrayElements } from '../api/json-array.ts';
import { checked, describeIssues, ListedResponse, type Study } from '../api/resources.ts';
import { PayloadError } from '../errors.ts';
import { archiveRaw, type ExtractSinks } from '../records.ts';
import { redact } from '../redact.ts';
import { keyedAnswers, repeatedKeyReason } from './keys.ts';
import { jsonText, MAX_NESTING, nestsDeeperThan, tooDeepReason } from './nesting.ts';

export interface PageQuery {
  perPage: number;
  updatedSince?: string;
  includeInProgress: boolean;
}

/** A listing page as read: its elements, and its raw record to archive once they are read. */
export interface FetchedPage {
  elements: JsonArrayElements;
  tooDeep: boolean;
  /** Tells a page from the one before it (a service that ignores `page`). */
  digest: string;
  url: string;
  archive(): void;
}

/** Where a page's elements go, one call each, in the page's order. */
export interface PageItems {
  /** A valid item; `bytes`, its size as received when known (the spill's memory budget). */
  accept(item: ListedResponse, bytes: number | undefined): void;
  /** An item that is not a valid response, with the reason (page and position first). */
  reject(raw: unknown, reason: string): void;
  /** A warning about an item that was kept. */
  warn(code: string, message: string): void;
}

export async function fetchPage(
  client: ApiClient,
  study: Study,
  options: PageQuery,
  page: number,
  sinks: ExtractSinks,
): Promise<FetchedPage> {
  const query = { page, perPage: options.perPage, includeInProgress: options.includeInProgress };
  const fetched = await client.listResponses(
    study.link_id,
    options.updatedSince === undefined ? query : { ...query, updatedSince: options.updatedSince },
  );
  const elements =
    fetched.elements ?? (Array.isArray(fetched.payload) ? parsedElements(fetched.payload) : null);
  const tooDeep = elements ? elements.nestsDeeperThan(MAX_NESTING) : nestsDeeperThan(fetched.payload);
  // A page too deep to write out as it is goes to raw/ as its JSON text (written without recursion).
  const received = tooDeep ? { ...fetched, payload: jsonText(wholePage(fetched)) } : fetched;
  const archive = () =>
    archiveRaw(sinks.raw, 'list_responses', received, { link_id: study.link_id, study_id: study.id, page });
  if (!elements) {
    archive();
    throw pageError(study, `page ${page} is not a JSON array of responses`, fetched.url, fetched.status);
  }
  return { elements, tooDeep, digest: pageDigest(received), url: fetched.url, archive };
}

/**
 * Every element of the page, checked: valid items, rejects and warnings into `items`. An
 * element that is not JSON fails the whole page (PayloadError), as a body that is not JSON does.
 */
export function readElements(study: Study, page: number, fetched: FetchedPage, items: PageItems): void {
  const { elements, tooDeep, url } = fetched;
  for (let index = 0; index < elements.length; index++) {
    const element = elements.element(index);
    const at = `page ${page} [${index}]`;
    if (!element.ok) throw pageError(study, `${at} is ${element.reason}`, url);
    const raw = element.value;
    if (tooDeep && nestsDeeperThan(raw)) {
      items.reject(raw, `${at} ${tooDeepReason}`);
      continue;
    }
    const parsed = checked(ListedResponse, raw);
    if (!parsed.success) {
      items.reject(raw, `${at} ${describeIssues(parsed.error)}`);
      continue;
    }
    const differing = element.repeatedKeys?.find((repeated) => !repeated.alike);
    if (differing) {
      items.reject(raw, `${at} ${repeatedKeyReason(differing)}`);
      continue;
    }
    const keyed = keyedAnswers(parsed.data);
    if (!keyed.ok) {
      items.reject(raw, `${at} ${keyed.reason}`);
      continue;
    }
    const { id } = keyed.item;
    for (const { member, key, copies } of element.repeatedKeys ?? []) {
      items.warn(
        'duplicate_key',
        `response "${id}" sends ${member} key "${key}" ${copies} times, every copy alike; kept once`,
      );
    }
    for (const { answer_id, copies } of keyed.collapsed) {
      items.warn(
        'duplicate_answer',
        `response "${id}" lists answer_id "${answer_id}" ${copies} times, every copy alike; kept once`,
      );
    }
    items.accept(keyed.item, element.bytes);
  }
}

export function pageError(study: Study, what: string, url: string, status?: number): PayloadError {
  return new PayloadError(`list_responses for study "${study.link_id}": ${redact(what)} (${url})`, {
    context: {
      operation: 'list_responses',
      study: study.link_id,
      url,
      ...(status === undefined ? {} : { status }),
    },
  });
}

/** A page that arrived parsed (a recorded answer, or a body that could not be split), element by element. */
function parsedElements(values: readonly unknown[]): JsonArrayElements {
  return {
    length: values.length,
    nestsDeeperThan: (limit) => nestsDeeperThan(values, limit),
    element: (index) => ({ ok: true, value: values[index] }),
  };
}

/** The page as one value: only for a page too deep to keep as received. */
function wholePage(fetched: Fetched): unknown {
  const { elements } = fetched;
  if (elements === undefined) return fetched.payload;
  return Array.from({ length: elements.length }, (_, index) => {
    const element = elements.element(index);
    return element.ok ? element.value : element.text;
  });
}

/**
 * What tells a page from the one before: the SHA-256 of its body as received, else (no bytes
 * kept, or a page too deep to keep them) of its payload written out. The bytes spare a
 * second page-sized string per page.
 */
function pageDigest(received: Fetched): string {
  const hash = createHash('sha256');
  const { json } = received;
  if (json !== undefined && json.of === received.payload)
    return `body:${hash.update(json.bytes).digest('hex')}`;
  const text = typeof received.payload === 'string' ? received.payload : JSON.stringify(received.payload);
  return `text:${hash.update(text).digest('hex')}`;
}
