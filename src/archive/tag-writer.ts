/**
 * Writes a bag's tag files once its payload is written: bagit.txt, bag-info.txt (the fields
 * given, then Payload-Oxum and Bag-Size counted from the payload), a manifest per algorithm,
 * and a tag manifest per algorithm over those four files; then ends the bag.
 */
import { diskFile, type Payload } from './payload.ts';
import type { BagSink, Digests } from './sink.ts';
import {
  ALGORITHMS,
  BAG_INFO_TXT,
  BAGIT_TXT,
  bagInfoTxt,
  bagitTxt,
  bagSize,
  manifestName,
  manifestTxt,
  payloadOxum,
  tagManifestName,
} from './tags.ts';

export async function writeTagFiles(
  sink: BagSink,
  payload: Payload,
  fields: readonly (readonly [string, string])[],
): Promise<void> {
  const info = bagInfoTxt([
    ...fields,
    ['Payload-Oxum', payloadOxum(payload.bytes, payload.files)],
    ['Bag-Size', bagSize(payload.bytes)],
  ]);
  const tags: { path: string; digests: Digests }[] = [];
  const add = async (path: string, text: string) => {
    const content = Buffer.from(text, 'utf8');
    const digests: Digests = await sink.add({ path, size: content.length, open: async () => [content] });
    tags.push({ path, digests });
  };
  await add(BAGIT_TXT, bagitTxt());
  await add(BAG_INFO_TXT, info);
  const manifests = await payload.manifests();
  for (const algorithm of ALGORITHMS) {
    const path = manifestName(algorithm);
    tags.push({ path, digests: await sink.add(await diskFile(path, manifests[algorithm])) });
  }
  const tagged = [...tags];
  for (const algorithm of ALGORITHMS) {
    const text = manifestTxt(tagged, algorithm);
    const content = Buffer.from(text, 'utf8');
    await sink.add({ path: tagManifestName(algorithm), size: content.length, open: async () => [content] });
  }
  await sink.finish();
}
