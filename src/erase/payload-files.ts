/**
 * The run's files of JSON lines, as erase rewrites them: raw/<operation>.jsonl.gz (every
 * payload as received) and rejects.jsonl. A line of an erased response goes; a listing page
 * keeps its other responses; and a line that still names an erased id anywhere after that
 * (a reject's raw text, a payload of a shape not foreseen) goes whole: an audit line lost is
 * better than a respondent kept.
 */
import { createInterface } from 'node:readline';
import { PassThrough, type Readable } from 'node:stream';
import { createGunzip, createGzip } from 'node:zlib';
import { copyInto } from '../storage/copy.ts';
import type { Storage } from '../storage/types.ts';

export interface LinesKept {
  kept: number;
  removed: number;
  /** The reasons of the rejects kept (rejects.jsonl), for the run's report. */
  reasons: string[];
}

/** Whether `text` names any of `ids`. */
export function namesAny(text: string, ids: ReadonlySet<string>): boolean {
  for (const id of ids) if (text.includes(id)) return true;
  return false;
}

/** One line as kept: unchanged, rewritten without the erased responses, or null (removed). */
export function keptLine(line: string, ids: ReadonlySet<string>): string | null {
  if (!namesAny(line, ids)) return line;
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return null;
  }
  if (record === null || typeof record !== 'object') return null;
  const fields = record as Record<string, unknown>;
  if (typeof fields.response_id === 'string' && ids.has(fields.response_id)) return null;
  if (Array.isArray(fields.payload)) {
    const payload = fields.payload.filter((item) => !namesAny(JSON.stringify(item), ids));
    const rewritten = JSON.stringify({ ...fields, payload });
    return namesAny(rewritten, ids) ? null : rewritten;
  }
  return null;
}

async function* lines(input: Readable): AsyncIterable<string> {
  const reader = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of reader) if (line !== '') yield line;
}

/** Copies `path` of `from` to `path` of `to` line by line, without the erased responses' lines. */
async function filterLines(
  input: Readable,
  output: PassThrough,
  ids: ReadonlySet<string>,
  counts: LinesKept,
  reasonOf?: (line: string) => string | undefined,
): Promise<void> {
  try {
    for await (const line of lines(input)) {
      const kept = keptLine(line, ids);
      if (kept === null) {
        counts.removed += 1;
        continue;
      }
      counts.kept += 1;
      const reason = reasonOf?.(kept);
      if (reason !== undefined) counts.reasons.push(reason);
      if (!output.write(`${kept}\n`)) await new Promise((resolve) => output.once('drain', resolve));
    }
    output.end();
  } catch (error) {
    output.destroy(error as Error);
  }
}

/** rejects.jsonl without the erased responses' rejects. */
export async function rewriteRejects(
  from: Storage,
  to: Storage,
  path: string,
  ids: ReadonlySet<string>,
): Promise<LinesKept> {
  const counts: LinesKept = { kept: 0, removed: 0, reasons: [] };
  const output = new PassThrough();
  const reasonOf = (line: string) => {
    try {
      const reason = (JSON.parse(line) as { reason?: unknown }).reason;
      return typeof reason === 'string' ? reason : undefined;
    } catch {
      return undefined;
    }
  };
  const copied = copyInto(output, to, path);
  await filterLines(await from.readStream(path), output, ids, counts, reasonOf);
  await copied;
  return counts;
}

/** raw/<operation>.jsonl.gz without the erased responses' payloads. */
export async function rewriteRaw(
  from: Storage,
  to: Storage,
  path: string,
  ids: ReadonlySet<string>,
): Promise<LinesKept> {
  const counts: LinesKept = { kept: 0, removed: 0, reasons: [] };
  const gunzip = createGunzip();
  (await from.readStream(path)).on('error', (error) => gunzip.destroy(error)).pipe(gunzip);
  const text = new PassThrough();
  const gzip = createGzip({ level: 3 });
  text.on('error', (error) => gzip.destroy(error)).pipe(gzip);
  const copied = copyInto(gzip, to, path);
  await filterLines(gunzip, text, ids, counts);
  await copied;
  return counts;
}
