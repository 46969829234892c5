/** Key paths into a pipeline file, written as users read them: "output.formats[1]". */
export type KeyPath = readonly PropertyKey[];

export function formatPath(path: KeyPath): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else text += text === '' ? String(segment) : `.${String(segment)}`;
  }
  return text;
}

/** The value found at a path, or undefined when any step is missing. */
export function valueAt(root: unknown, path: KeyPath): unknown {
  let current = root;
  for (const segment of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[segment];
  }
  return current;
}

/** A found value, short and quoted the way the message needs it. */
export function describeFound(value: unknown): string {
  if (value === undefined) return 'nothing (the key is missing)';
  if (value === null) return 'an empty value';
  if (typeof value === 'string')
    return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  if (Array.isArray(value)) return `a list (${JSON.stringify(value).slice(0, 60)})`;
  if (typeof value === 'object') return 'a mapping';
  return String(value);
}
