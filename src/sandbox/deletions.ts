/**
 * Responses the sandbox deletes as it starts (`study-export sandbox --delete-responses`), as
 * the service would on a respondent's request: the next reconciling run takes them out of
 * current/ (docs/erasure.md).
 */
import { ConfigError } from '../errors.ts';

export interface ResponseDeletion {
  /** The study (link_id or permanent id); absent, the first study. */
  study?: string;
  /** Its first responses by created_at, this many. */
  count: number;
}

export const deletionsRule = 'expected N or N:LINK_ID (the first N responses of that study), comma-separated';

/** "2" or "2:LINK_ID", comma-separated. */
export function parseResponseDeletions(spec: string): ResponseDeletion[] {
  return spec
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const cut = part.indexOf(':');
      const count = cut < 0 ? part : part.slice(0, cut);
      if (!/^[1-9]\d{0,6}$/.test(count)) {
        throw new ConfigError(`--delete-responses: "${part}": ${deletionsRule}`);
      }
      return cut < 0 ? { count: Number(count) } : { study: part.slice(cut + 1), count: Number(count) };
    });
}
