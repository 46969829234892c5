/**
 * Escaping, declared once: text into HTML (report.html, the viewer, a bag's pages, SVG) and
 * into XML (a REFI-QDA project). CSV's formula escape is the csv format's (formats/csv.ts).
 * Respondents' words are untrusted everywhere: every text passes through one of these.
 */

const entities: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text for HTML or SVG content and attribute values (always quoted). */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => entities[c] ?? c);
}

/** At most `max` characters (code points), with an ellipsis when cut. */
export function shorten(value: string, max: number): string {
  const chars = Array.from(value.replace(/\s+/g, ' ').trim());
  return chars.length <= max ? chars.join('') : `${chars.slice(0, max - 1).join('')}…`;
}

// XML 1.0: every character it cannot carry (C0 controls but tab, line feed and carriage return,
// lone surrogates, U+FFFE and U+FFFF) is dropped; in an attribute value tab and line ends are
// character references, since a parser turns them into spaces otherwise.
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
