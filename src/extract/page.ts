/** A listing page as values: its elements when it arrived parsed, the whole page, and its digest. */
import { createHash } from 'node:crypto';
import type { Fetched } from '../api/client.ts';
import type { JsonArrayElements } from '../api/json-array.ts';
import { nestsDeeperThan } from './nesting.ts';

/** A page that arrived parsed (a recorded answer, or a body that could not be split), element by element. */
export function parsedElements(values: readonly unknown[]): JsonArrayElements {
  return {
    length: values.length,
    nestsDeeperThan: (limit) => nestsDeeperThan(values, limit),
    element: (index) => ({ ok: true, value: values[index] }),
  };
}

/** The page as one value: only for a page too deep to keep as received. */
export function wholePage(fetched: Fetched): unknown {
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
export function pageDigest(received: Fetched): string {
  const hash = createHash('sha256');
  const { json } = received;
  if (json !== undefined && json.of === received.payload)
    return `body:${hash.update(json.bytes).digest('hex')}`;
  const text = typeof received.payload === 'string' ? received.payload : JSON.stringify(received.payload);
  return `text:${hash.update(text).digest('hex')}`;
}
