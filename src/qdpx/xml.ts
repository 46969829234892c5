/**
 * Text into project.qde. Respondents' words, question texts and attribute keys are untrusted:
 * every text goes through the XML escaping of src/output/codecs/escape.ts.
 */
import { xmlAttr, xmlSafe, xmlText } from '../output/codecs/escape.ts';

/** `<name a="v" …>` or `<name a="v" …/>`; attributes whose value is undefined are left out. */
export function tag(
  name: string,
  attributes: Record<string, string | number | boolean | undefined>,
  close = false,
): string {
  let out = `<${name}`;
  for (const [key, value] of Object.entries(attributes)) {
    if (value !== undefined) out += ` ${key}="${xmlAttr(String(value))}"`;
  }
  return `${out}${close ? '/>' : '>'}`;
}

/** `<name>text</name>`. */
export function element(name: string, text: string): string {
  return `<${name}>${xmlText(text)}</${name}>`;
}

/**
 * A name for a program's list (a code, a source, a case): one line, no controls, trimmed;
 * QualCoder also uses source names as file names, so no path separators either.
 */
export function displayName(text: string, fallback: string): string {
  const clean = xmlSafe(text)
    .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return clean === '' ? fallback : clean;
}

/** A name safe as a file name as well: no "/", "\\" or other characters Windows refuses. */
export function fileSafeName(text: string, fallback: string): string {
  const name = displayName(text.replace(/[/\\:*?"<>|]/g, '_'), fallback).replace(/^\.+|\.+$/g, '');
  return name === '' ? fallback : name;
}

/** Hands out names unique across one list: a name already given gets " (2)", " (3)"… */
export class UniqueNames {
  readonly #taken = new Set<string>();

  /** `name` + `suffix` (an extension), or with " (n)" before the suffix when that is taken. */
  claim(name: string, suffix = ''): string {
    let candidate = `${name}${suffix}`;
    for (let n = 2; this.#taken.has(candidate.toLowerCase()); n++) candidate = `${name} (${n})${suffix}`;
    this.#taken.add(candidate.toLowerCase());
    return candidate;
  }
}
