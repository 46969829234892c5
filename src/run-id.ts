/**
 * Run ids: `<UTC time>[-n][-shard-K-of-N]`, e.g. 20261121T235500Z, 20261121T235500Z-2 (a second
 * run within the same second), 20261121T235500Z-shard-1-of-3. Their order is the order the runs
 * started in, which plain string order is not ('-' sorts before '.', and "-10" before "-9").
 */

/** The run id of a run started at `time` (before any `-n` or shard suffix). */
export function runIdAt(time: number): string {
  return new Date(time)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
}

const runIdPattern = /^(\d{8}T\d{6}Z)(?:-(\d+))?(.*)$/;

/** Orders run ids by start: time, then the within-second number; anything else by string. */
export function compareRunIds(a: string, b: string): number {
  const left = runIdPattern.exec(a);
  const right = runIdPattern.exec(b);
  if (left && right) {
    const time = compareStrings(left[1] as string, right[1] as string);
    if (time !== 0) return time;
    const n = Number(left[2] ?? 1) - Number(right[2] ?? 1);
    if (n !== 0) return n;
    return compareStrings(left[3] as string, right[3] as string);
  }
  return compareStrings(a, b);
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
