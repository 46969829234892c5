/**
 * The handoff ledger: every package made from an output for someone outside it (share,
 * archive, qdpx) appends one record to the output's handoffs/: when, which command, which
 * package, where it was written, and which responses it holds. Append-only and safe for two
 * writers at once, on a folder or a bucket alike: each record is an object of its own, named by
 * its time and a random suffix and created only where no object has that name (putIfAbsent);
 * nothing ever rewrites or removes one.
 *
 * A response is named as `erase` and erasures/ name it, by the SHA-256 of its id (`ref`), so
 * the ledger outlives an erasure without naming the respondent, and still answers "which
 * packages held X?" for anyone who knows X. Where the package de-identified its responses,
 * the record also keeps the pseudonyms it holds: what its recipient must be told to delete.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Storage } from '../storage/types.ts';

export const HANDOFFS_DIR = 'handoffs';

export type HandoffCommand = 'share' | 'archive' | 'qdpx';

/** One response of a package: its ref, and its pseudonym where the package holds one. */
export interface HandedResponse {
  ref: string;
  pseudonym?: string;
}

export interface Handoff {
  /** The record's own name (time and suffix), unique in handoffs/. */
  id: string;
  at: string;
  command: HandoffCommand;
  /** The package's name (a bag, a .qdpx file, a share folder). */
  package: string;
  /** Where it was written: a path or an s3:// URL. */
  location: string;
  studies: { study_id: string; link_id: string }[];
  /** True where the package holds the responses' ids; false where it holds pseudonyms. */
  identified: boolean;
  responses: HandedResponse[];
}

export type HandoffInput = Omit<Handoff, 'id' | 'at' | 'responses'> & {
  /** The responses the package holds: their ids, and their pseudonyms where it holds those. */
  responses: readonly { id: string; pseudonym?: string }[];
  at?: Date;
};

/** SHA-256 of a response id, hex: how the ledger and erasures/ name a response. */
export function responseRef(id: string): string {
  return createHash('sha256').update(id, 'utf8').digest('hex');
}

function recordName(at: Date): string {
  const time = at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.(\d+)Z$/, '$1Z');
  return `${time}-${randomBytes(4).toString('hex')}`;
}

/**
 * The responses a package holds, from the ids as it holds them (pseudonyms, where the privacy
 * profile replaced them) and the handoff's linkage (each pseudonym and the id it stands for).
 */
export function heldResponses(
  held: readonly string[],
  linkage: readonly { kind: string; pseudonym: string; response_id: string }[],
): { id: string; pseudonym?: string }[] {
  const idOf = new Map(
    linkage.filter((entry) => entry.kind === 'response').map((entry) => [entry.pseudonym, entry.response_id]),
  );
  return held.map((id) => {
    const original = idOf.get(id);
    return original === undefined ? { id } : { id: original, pseudonym: id };
  });
}

/** Appends the record of one package; returns it as stored. */
export async function appendHandoff(output: Storage, input: HandoffInput): Promise<Handoff> {
  const at = input.at ?? new Date();
  const { responses, at: _at, ...rest } = input;
  for (let attempt = 0; ; attempt++) {
    const record: Handoff = {
      id: recordName(at),
      at: at.toISOString(),
      ...rest,
      responses: responses.map((response) => ({
        ref: responseRef(response.id),
        ...(response.pseudonym === undefined ? {} : { pseudonym: response.pseudonym }),
      })),
    };
    const text = `${JSON.stringify(record, null, 2)}\n`;
    if (await output.putIfAbsent(`${HANDOFFS_DIR}/${record.id}.json`, text)) return record;
    if (attempt > 5) throw new Error(`cannot name a new record in ${output.describe(HANDOFFS_DIR)}`);
  }
}

/** Every handoff recorded, oldest first; with `responseId`, those whose package held it. */
export async function listHandoffs(
  output: Storage,
  options: { responseId?: string } = {},
): Promise<Handoff[]> {
  const ref = options.responseId === undefined ? null : responseRef(options.responseId);
  const found: Handoff[] = [];
  for await (const file of output.list(HANDOFFS_DIR)) {
    if (file.path.includes('/') || !file.path.endsWith('.json')) continue;
    const text = await output.read(`${HANDOFFS_DIR}/${file.path}`);
    if (text === null) continue;
    const record = JSON.parse(text.toString('utf8')) as Handoff;
    if (ref === null || record.responses.some((response) => response.ref === ref)) found.push(record);
  }
  return found.sort((a, b) => a.id.localeCompare(b.id));
}

/** Packages that held any of `ids`, each with the erased responses it held. */
export async function handoffsHolding(
  output: Storage,
  ids: Iterable<string>,
): Promise<{ handoff: Handoff; held: HandedResponse[] }[]> {
  const refs = new Set([...ids].map(responseRef));
  const holding: { handoff: Handoff; held: HandedResponse[] }[] = [];
  for (const handoff of await listHandoffs(output)) {
    const held = handoff.responses.filter((response) => refs.has(response.ref));
    if (held.length > 0) holding.push({ handoff, held });
  }
  return holding;
}

/** One line for a person: when, what, where, how many responses. */
export function describeHandoff(handoff: Handoff): string {
  const studies = handoff.studies.map((study) => study.link_id).join(', ');
  const form = handoff.identified ? 'identified' : 'de-identified';
  return `${handoff.at} ${handoff.command} ${handoff.package} -> ${handoff.location} (${studies}; ${handoff.responses.length} responses, ${form})`;
}
