/**
 * `study-export verify PROJECT.qdpx`: a project made with a privacy profile (its description
 * says so) must hold no match of the built-in detectors in project.qde or any source text. The
 * schema and the coded passages are checked by the tests with readers of their own.
 */

import { bufferedZipEntries } from '../output/codecs/zip-reader.ts';
import { DEIDENTIFIED_MARK, type Leftover, PackageScan } from '../privacy/index.ts';
import { openStorage, type S3Settings } from '../storage/index.ts';

export interface ProjectCheck {
  deidentified: boolean;
  leftovers: Leftover[];
}

export async function verifyProject(location: string, s3: S3Settings = {}): Promise<ProjectCheck> {
  const slash = location.lastIndexOf('/');
  const storage = await openStorage(slash > 0 ? location.slice(0, slash) : '.', s3);
  const name = location.slice(slash + 1);
  const bytes = await storage.read(name);
  if (!bytes) throw new Error(`${location}: no such file`);
  const scan = new PackageScan();
  await scan.add(name, bytes);
  const deidentified = (await projectText(bytes)).includes(DEIDENTIFIED_MARK);
  return { deidentified, leftovers: deidentified ? scan.leftovers() : [] };
}

/** project.qde's text, where the project's description is. */
async function projectText(bytes: Buffer): Promise<string> {
  const [project] = await bufferedZipEntries(bytes, (name) => name === 'project.qde');
  return project?.data.toString('utf8') ?? '';
}
