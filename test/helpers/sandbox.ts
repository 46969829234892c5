/** Small HTTP helpers for the sandbox tests: real fetch over loopback, nothing mocked. */
import { expect } from 'vitest';
import type { SingleResponse } from '../../src/api/resources.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';

export interface JsonReply<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

export async function getJson<T = unknown>(url: string, apiKey?: string): Promise<JsonReply<T>> {
  const response = await fetch(url, { headers: apiKey === undefined ? {} : { 'x-api-key': apiKey } });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: JSON.parse(text) as T };
}

/** GET {base_url}/api/public/<path> with the sandbox's primary key. */
export function api<T = unknown>(
  sandbox: Sandbox,
  path: string,
  apiKey: string = sandbox.api_key,
): Promise<JsonReply<T>> {
  return getJson<T>(`${sandbox.base_url}/api/public/${path}`, apiKey);
}

/** A response's detail as the service answers the single-response call (status 200). */
export async function detailOf(
  sandbox: Sandbox,
  linkId: string,
  responseId: string,
): Promise<SingleResponse> {
  const reply = await api<SingleResponse>(
    sandbox,
    `responses/${encodeURIComponent(linkId)}/${encodeURIComponent(responseId)}`,
  );
  expect(reply.status).toBe(200);
  return reply.body;
}

export type Item = Record<string, unknown> & { id: string };

/** The service's own types (src/api/resources.ts), not restated here. */
export type { SingleResponse as Detail, TranscriptRow as Row } from '../../src/api/resources.ts';

/** All pages of a study's responses, with optional extra query parameters. */
export async function allPages(sandbox: Sandbox, linkId: string, query = '', perPage = 10): Promise<Item[]> {
  const items: Item[] = [];
  for (let page = 0; ; page++) {
    const reply = await api<Item[]>(
      sandbox,
      `responses/${encodeURIComponent(linkId)}?page=${page}&per_page=${perPage}${query}`,
    );
    if (reply.status !== 200) throw new Error(`status ${reply.status}`);
    items.push(...reply.body);
    if (reply.body.length < perPage) return items;
  }
}

/** The first study of a modality as the primary key sees it (studies cycle text, audio, video). */
export function studyOf(sandbox: Sandbox, modality: 'text' | 'audio' | 'video'): string {
  const index = { text: 0, audio: 1, video: 2 }[modality];
  const study = sandbox.studies()[index];
  if (!study) throw new Error(`no ${modality} study`);
  return study.link_id;
}

/** A single-response request: /api/public/responses/<link_id>/<response_id>. */
export function isDetailPath(path: string | undefined): boolean {
  return /^\/api\/public\/responses\/[^/?]+\/[^/?]+/.test(path ?? '');
}
