/**
 * Payloads nested too deep to handle. JSON.parse accepts any depth, but JSON.stringify, the
 * validators and the transform recurse: a record 100 000 levels deep overflows the stack
 * ("Maximum call stack size exceeded") and would end the run. The service's resources nest
 * a few levels; anything beyond MAX_NESTING becomes a reject, kept raw as its JSON text
 * (written here without recursion), and the run goes on.
 */

export const MAX_NESTING = 256;

export const tooDeepReason = `nested deeper than ${MAX_NESTING} levels of JSON objects and arrays: too deep to process (kept raw as text)`;

/** Whether `value` has containers nested more than `limit` deep; walks without recursion. */
export function nestsDeeperThan(value: unknown, limit = MAX_NESTING): boolean {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop() as { value: unknown; depth: number };
    if (current === null || typeof current !== 'object') continue;
    if (depth + 1 > limit) return true;
    const children = Array.isArray(current) ? current : Object.values(current);
    for (const child of children) {
      if (child !== null && typeof child === 'object') stack.push({ value: child, depth: depth + 1 });
    }
  }
  return false;
}

type Frame =
  | { items: unknown[]; next: number; close: ']' }
  | { entries: [string, unknown][]; next: number; close: '}' };

/** JSON.stringify's text for a parsed JSON value of any depth, without recursion. */
export function jsonText(value: unknown): string {
  const parts: string[] = [];
  const stack: Frame[] = [];
  const open = (current: unknown): void => {
    if (current === null || typeof current !== 'object') {
      parts.push(JSON.stringify(current) ?? 'null');
    } else if (Array.isArray(current)) {
      parts.push('[');
      stack.push({ items: current, next: 0, close: ']' });
    } else {
      parts.push('{');
      stack.push({ entries: Object.entries(current), next: 0, close: '}' });
    }
  };
  open(value);
  while (stack.length > 0) {
    const top = stack[stack.length - 1] as Frame;
    const length = 'items' in top ? top.items.length : top.entries.length;
    if (top.next >= length) {
      parts.push(top.close);
      stack.pop();
      continue;
    }
    if (top.next > 0) parts.push(',');
    const index = top.next++;
    if ('items' in top) {
      open(top.items[index]);
    } else {
      const [key, child] = top.entries[index] as [string, unknown];
      parts.push(JSON.stringify(key), ':');
      open(child);
    }
  }
  return parts.join('');
}

/** A payload as raw/ and rejects keep it: itself, or its JSON text when it nests too deep. */
export function storable(payload: unknown): unknown {
  return nestsDeeperThan(payload) ? jsonText(payload) : payload;
}
