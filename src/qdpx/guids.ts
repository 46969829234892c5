/**
 * Every GUID of a project is a UUID version 5 (RFC 9562: SHA-1 of a namespace and a name) of
 * the permanent ids it stands for, so exporting the same study again gives every code, case,
 * source and coding the same GUID, and a researcher can line two exports up. Link ids, names
 * and positions never enter a GUID: they can change while the thing stays the same.
 */
import { createHash } from 'node:crypto';

/** The namespace of every study-export GUID (a fixed random UUID; never change it). */
export const GUID_NAMESPACE = '6f1c2b0e-5d3a-4f7e-9a61-2c8e4b7d9f30';

const namespaceBytes = Buffer.from(GUID_NAMESPACE.replace(/-/g, ''), 'hex');

/** The UUID v5 of `name` in `namespace` (lower-case, hyphenated). */
export function uuidV5(name: string, namespace: Buffer = namespaceBytes): string {
  const hash = createHash('sha1').update(namespace).update(name, 'utf8').digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x50;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** What a GUID stands for: a kind and the permanent ids that identify it. */
export type GuidKind =
  | 'project'
  | 'user'
  | 'code'
  | 'concept'
  | 'summary-code'
  | 'variable'
  | 'case'
  | 'conversation'
  | 'selection'
  | 'coding'
  | 'recording'
  | 'transcript';

/** The GUID of a thing of `kind` named by `ids` (a JSON array, so no two lists share a name). */
export function guidOf(kind: GuidKind, ...ids: Array<string | number | null>): string {
  return uuidV5(JSON.stringify([kind, ...ids]));
}
