/**
 * Text into project.qde. Respondents' words, question texts and attribute keys are untrusted:
 * every character XML 1.0 cannot carry (C0 controls but tab, line feed and carriage return,
 * lone surrogates, U+FFFE and U+FFFF) is dropped, markup characters are escaped, and in an
 * attribute value tab and line ends are written as character references, since a parser
 * turns them into spaces otherwise.
 */

const notXml = /[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu;

/** `text` without the characters XML 1.0 cannot hold. */
export function xmlSafe(text: string): string {
  return text.replace(notXml, '');
}

/** Element content. */
export function xmlText(text: string): string {
  return xmlSafe(text).replace(/[&<>\r]/g, (c) => contentEscapes[c] ?? c);
}

/** An attribute value (in double quotes). */
export function xmlAttr(text: string): string {
  return xmlSafe(text).replace(/[&<>"\t\n\r]/g, (c) => attributeEscapes[c] ?? c);
}

// A carriage return in content is kept as a reference: a parser turns a literal one into \n.
const contentEscapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '\r': '&#13;' };
const attributeEscapes: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  '\t': '&#9;',
  '\n': '&#10;',
  '\r': '&#13;',
};

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
