/** "Did you mean": the near misses of names people type. */

/**
 * The known name an unknown one most likely meant: within one edit per three letters
 * (--ful, --formts, --dryrun), or one it begins (--conc); undefined when none is that close.
 * Options, commands, pipeline keys and pipeline names are all matched this way.
 */
export function closestName(name: string, known: readonly string[]): string | undefined {
  const candidates = known.filter((option) => option.length > 1 && option !== name);
  const limit = Math.max(1, Math.floor(name.length / 3));
  let best: { option: string; distance: number } | undefined;
  for (const option of candidates) {
    const distance = editDistance(name.toLowerCase(), option);
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { option, distance };
  }
  if (best) return best.option;
  return name.length >= 3 ? candidates.find((option) => option.startsWith(name.toLowerCase())) : undefined;
}

/** Edit distance: insertions, deletions, substitutions and swaps of two neighbours (--prot). */
function editDistance(a: string, b: string): number {
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, index) => index)];
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    const above = rows[i - 1] as number[];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(
        (above[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (above[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      }
      row[j] = best;
    }
    rows.push(row);
  }
  return (rows[a.length] as number[])[b.length] as number;
}
