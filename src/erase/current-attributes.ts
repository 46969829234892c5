/** current/'s attributes rows, each bucket's newest part, for choosing responses by attribute. */
import { newestPart } from '../current/index.ts';
import { readPart } from '../output/formats/parquet-read.ts';
import type { Storage } from '../storage/types.ts';
import type { Row } from '../tables/index.ts';

const ATTRIBUTES = 'current/attributes';

export async function* readCurrentAttributes(storage: Storage): AsyncIterable<Row<'attributes'>> {
  const byFolder = new Map<string, { name: string; bytes: number }[]>();
  for await (const file of storage.list(ATTRIBUTES)) {
    const [folder, name, ...rest] = file.path.split('/');
    if (!folder || !name || rest.length > 0) continue;
    byFolder.set(folder, [...(byFolder.get(folder) ?? []), { name, bytes: file.bytes }]);
  }
  for (const [folder, files] of byFolder) {
    const newest = newestPart(files.map((file) => file.name));
    const part = files.find((file) => file.name === newest);
    if (!part) continue;
    for await (const rows of readPart(
      storage,
      `${ATTRIBUTES}/${folder}/${part.name}`,
      part.bytes,
      'attributes',
    ))
      yield* rows;
  }
}
