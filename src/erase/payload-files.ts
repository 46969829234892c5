/**
 * The run's files of JSON lines, as erase rewrites them: raw/<operation>.jsonl.gz (every
 * payload as received) and rejects.jsonl. A line of an erased response goes; a listing page
 * keeps its other responses; and a line that still names an erased id anywhere after that
 * (a reject's raw text, a payload of a shape not foreseen) goes whole: an audit line lost is
 * better than a respondent kept.
 */
import { PassThrough, type Readable } from 'node:stream';
import { createGunzip, createGzip } from 'node:zlib';
import { copyInto } from '../storage/copy.ts';
import type { Storage } from '../storage/types.ts';

/** The rejects kept (rejects.jsonl), for the run's manifest and report. */
export interface RejectsKept {
  kept: number;
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

const LINE_FEED = 0x0a;

/**
 * A byte stream's lines in blocks: each chunk's complete lines at once (what follows its last
 * line end is carried into the next), the last line given its line end.
 */
async function* lineBlocks(input: Readable): AsyncIterable<Buffer> {
  let carry: Buffer = Buffer.alloc(0);
  for await (const chunk of input) {
    const bytes = carry.length === 0 ? (chunk as Buffer) : Buffer.concat([carry, chunk as Buffer]);
    const end = bytes.lastIndexOf(LINE_FEED) + 1;
    carry = bytes.subarray(end);
    if (end > 0) yield bytes.subarray(0, end);
  }
  if (carry.length > 0) yield Buffer.concat([carry, Buffer.from('\n')]);
}

/**
 * Copies `input` to `output` without the erased responses' lines; `onKept` sees each line
 * kept. Without it, a block of lines that names no erased id at all (most of them) is copied
 * as its bytes; the others go line by line.
 */
async function filterLines(
  input: Readable,
  output: PassThrough,
  ids: ReadonlySet<string>,
  onKept?: (line: string) => void,
): Promise<void> {
  const needles = [...ids].map((id) => Buffer.from(id, 'utf8'));
  const write = async (bytes: string | Buffer) => {
    if (!output.write(bytes)) await new Promise((resolve) => output.once('drain', resolve));
  };
  try {
    for await (const block of lineBlocks(input)) {
      if (onKept === undefined && !needles.some((needle) => block.includes(needle))) {
        await write(block);
        continue;
      }
      const kept: string[] = [];
      for (const line of block.toString('utf8').split('\n')) {
        const left = line === '' ? null : keptLine(line, ids);
        if (left === null) continue;
        onKept?.(left);
        kept.push(`${left}\n`);
      }
      if (kept.length > 0) await write(kept.join(''));
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
): Promise<RejectsKept> {
  const rejects: RejectsKept = { kept: 0, reasons: [] };
  const output = new PassThrough();
  const copied = copyInto(output, to, path);
  await filterLines(await from.readStream(path), output, ids, (line) => {
    rejects.kept += 1;
    const reason = reasonOf(line);
    if (reason !== undefined) rejects.reasons.push(reason);
  });
  await copied;
  return rejects;
}

function reasonOf(line: string): string | undefined {
  try {
    const reason = (JSON.parse(line) as { reason?: unknown }).reason;
    return typeof reason === 'string' ? reason : undefined;
  } catch {
    return undefined;
  }
}

/** raw/<operation>.jsonl.gz without the erased responses' payloads. */
export async function rewriteRaw(
  from: Storage,
  to: Storage,
  path: string,
  ids: ReadonlySet<string>,
): Promise<void> {
  const gunzip = createGunzip();
  (await from.readStream(path)).on('error', (error) => gunzip.destroy(error)).pipe(gunzip);
  const text = new PassThrough();
  const gzip = createGzip({ level: 3 });
  text.on('error', (error) => gzip.destroy(error)).pipe(gzip);
  const copied = copyInto(gzip, to, path);
  await filterLines(gunzip, text, ids);
  await copied;
}
