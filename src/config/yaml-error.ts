/**
 * Where a YAML syntax error is, said as the person who made it would look for it. The yaml
 * library reports where its parser noticed the problem, which is not always the line to fix:
 * - a key indented deeper than its siblings continues the value above it, so it is reported at
 *   that value, on the line before;
 * - a list opened with [ (or a mapping with {) and never closed is noticed on the next line;
 * - a quote never closed is noticed at the end of the file.
 * For these the line named is the one to fix; any other error stays where the library puts it.
 */
import {
  type Document,
  isCollection,
  isNode,
  isScalar,
  LineCounter,
  type Node,
  visit,
  type YAMLError,
} from 'yaml';

export interface YamlErrorPlace {
  line: number;
  col: number;
  reason: string;
}

/** The first error of `document`, parsed from `text` with `lineCounter`, placed on the line to fix. */
export function placeYamlError(
  document: Document.Parsed,
  text: string,
  lineCounter: LineCounter,
): YamlErrorPlace | null {
  const [first] = document.errors;
  if (!first) return null;
  const at = (offset: number) => lineCounter.linePos(offset);
  const libraryReason =
    first.message.split('\n')[0]?.replace(/ at line \d+, column \d+:?$/, '') ?? first.message;
  if (first.code === 'BLOCK_AS_IMPLICIT_KEY' && /^Nested mappings/.test(first.message)) {
    const deeper = deeperKey(document.errors, first, text, lineCounter);
    if (deeper) return { ...deeper, reason: 'this key is indented deeper than the keys above it' };
  }
  if (/^Flow (sequence|mapping)/.test(first.message)) {
    const opened = unclosedAt(document, first.pos[0], (node) => isCollection(node) && node.flow === true);
    if (opened !== null) {
      const [open, close] = /^Flow sequence/.test(first.message) ? ['[', ']'] : ['{', '}'];
      return { ...at(opened), reason: `the ${open} opened here is not closed with ${close}` };
    }
  }
  if (first.code === 'MISSING_CHAR' && /^Missing closing .?quote/.test(first.message)) {
    const opened = unclosedAt(
      document,
      first.pos[0],
      (node) => isScalar(node) && (node.type === 'QUOTE_DOUBLE' || node.type === 'QUOTE_SINGLE'),
    );
    if (opened !== null) return { ...at(opened), reason: 'the quote opened here is not closed' };
  }
  return { ...at(first.pos[0]), reason: libraryReason };
}

/**
 * The line of a key indented deeper than its siblings: the library reports the value it
 * continues (a multi-line implicit key from there), whose end is on the deeper line.
 */
function deeperKey(
  errors: readonly YAMLError[],
  first: YAMLError,
  text: string,
  lineCounter: LineCounter,
): { line: number; col: number } | null {
  const multiline = errors.find(
    (error) => error.code === 'MULTILINE_IMPLICIT_KEY' && error.pos[0] === first.pos[0],
  );
  if (!multiline) return null;
  const { line } = lineCounter.linePos(multiline.pos[1]);
  if (line <= lineCounter.linePos(first.pos[0]).line) return null;
  const start = lineCounter.lineStarts[line - 1] ?? 0;
  const indent = /^[ \t]*/.exec(text.slice(start))?.[0].length ?? 0;
  return { line, col: indent + 1 };
}

/** Where the node that `matches` and runs up to `offset` (where the error was noticed) begins. */
function unclosedAt(
  document: Document.Parsed,
  offset: number,
  matches: (node: Node) => boolean,
): number | null {
  let start: number | null = null;
  visit(document, (_key, node) => {
    if (!isNode(node) || !node.range) return;
    const [from, , to] = node.range;
    if (from < offset && to >= offset && matches(node) && (start === null || from > start)) start = from;
  });
  return start;
}

/** Where the first alias (*name) that names no anchor before it is, if any. */
export function unresolvedAlias(
  document: Document.Parsed,
  lineCounter: LineCounter,
): { line: number; col: number } | null {
  let place: { line: number; col: number } | null = null;
  visit(document, {
    Alias(_key, node) {
      if (place !== null || node.resolve(document) !== undefined || !node.range) return;
      place = lineCounter.linePos(node.range[0]);
    },
  });
  return place;
}

export { LineCounter };
