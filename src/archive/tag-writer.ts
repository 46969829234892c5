/**
 * Writes a bag's tag files once its payload is written: bagit.txt, bag-info.txt (the fields
 * given, then Payload-Oxum and Bag-Size counted from the payload), a manifest per algorithm,
 * and a tag manifest per algorithm over those four files; then ends the bag.
 */
import { diskFile, memoryFile, type Payload } from './payload.ts';
import type { BagFile, BagSink, Digests } from './sink.ts';
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
  // The files the tag manifests list, with their digests.
  const tags: { path: string; digests: Digests }[] = [];
  const add = async (file: BagFile) => {
    tags.push({ path: file.path, digests: await sink.add(file) });
  };
  await add(memoryFile(BAGIT_TXT, bagitTxt()));
  await add(memoryFile(BAG_INFO_TXT, info));
  const manifests = await payload.manifests();
  for (const algorithm of ALGORITHMS)
    await add(await diskFile(manifestName(algorithm), manifests[algorithm]));
  for (const algorithm of ALGORITHMS)
    await sink.add(memoryFile(tagManifestName(algorithm), manifestTxt(tags, algorithm)));
  await sink.finish();
}
