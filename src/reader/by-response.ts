/** Rows of a table grouped by response: what every reader of a study's rows starts from. */
export function byResponse<T extends { response_id: string }>(rows: readonly T[]): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const row of rows) {
    const list = map.get(row.response_id);
    if (list) list.push(row);
    else map.set(row.response_id, [row]);
  }
  return map;
}
