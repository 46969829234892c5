/**
 * The one rule for making text safe to print or write: every http(s) URL loses its query
 * string, fragment and credentials (signed links must not leak), and every registered
 * secret (the API key) is masked. Errors, warnings, the manifest and the tables all pass
 * their text through `redact`.
 */

const secrets = new Set<string>();

/** A value (an API key) that must never be printed. Short values are ignored: they would mask ordinary text. */
export function registerSecret(value: string | undefined): void {
  if (value && value.length >= 4) secrets.add(value);
}

const urlInText = /\bhttps?:\/\/[^\s"'<>]+/gi;

function urlWithoutQuery(url: string): string {
  try {
    const parsed = new URL(url);
    // Nothing to hide: the text stays as written.
    if (!parsed.search && !parsed.hash && !parsed.username && !parsed.password) return url;
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return url.split(/[?#]/)[0] ?? '';
  }
}

/** `text` (or a URL) with every secret masked and every URL reduced to its origin and path. */
export function redact(text: string | URL): string {
  let safe = String(text);
  for (const secret of secrets) safe = safe.split(secret).join('***');
  return safe.replace(urlInText, urlWithoutQuery);
}
