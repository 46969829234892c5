/**
 * Where packages go: a local folder or s3://bucket/prefix, each package as a folder named
 * after its study or as one zip holding that folder (the project's zip writer,
 * src/output/codecs/zip-writer.ts). A package is built whole in a local folder first, then
 * delivered: a local folder renamed into place in one step (built beside it, so never across
 * disks), a bucket's files uploaded with datapackage.json last (the package is whole once it
 * is there), a zip written under a hidden name and renamed, or uploaded in one multipart
 * upload that completes only at its end. A package that exists is never written over.
 */
import { access, mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { ConfigError } from '../errors.ts';
import { ZipWriter } from '../output/codecs/zip-writer.ts';
import { DATAPACKAGE_FILE } from '../output/layout.ts';
import { isObjectStorage } from '../storage/index.ts';
import type { Storage } from '../storage/types.ts';
import type { WrittenFile } from './package.ts';

export type PackageForm = 'folder' | 'zip';

/** A package's name at the destination: the folder, or the zip file. */
export function entryName(name: string, form: PackageForm): string {
  return form === 'zip' ? `${name}.zip` : name;
}

/** The packages among `names` that exist at the destination already, as the user finds them. */
export async function existingPackages(
  target: Storage,
  names: readonly string[],
  form: PackageForm,
): Promise<string[]> {
  const found: string[] = [];
  for (const name of names) {
    const entry = entryName(name, form);
    if (await exists(target, entry, form)) found.push(target.describe(entry));
  }
  return found;
}

async function exists(target: Storage, entry: string, form: PackageForm): Promise<boolean> {
  if (!isObjectStorage(target.location))
    return access(target.describe(entry)).then(
      () => true,
      () => false,
    );
  if (form === 'zip') return (await target.size(entry)) !== null;
  for await (const _ of target.list(entry)) return true;
  return false;
}

/**
 * Packages go outside the output: one inside it would change what runs, current/ or the state
 * hold (or be taken for part of them). A ConfigError naming both, else nothing.
 */
export function refuseInsideOutput(output: string, to: string): void {
  const inside = isObjectStorage(output)
    ? `${to.replace(/\/+$/, '')}/`.startsWith(`${output.replace(/\/+$/, '')}/`)
    : ((path) => path === '' || (!path.startsWith('..') && !isAbsolute(path)))(
        relative(resolve(output), resolve(to)),
      );
  if (inside)
    throw new ConfigError(
      `--to ${to}: inside the output ${output}; packages go outside it: choose another --to`,
      {
        context: { file: to },
      },
    );
}

/** The refusal, naming every package in the way. */
export function existsError(paths: readonly string[]): ConfigError {
  return new ConfigError(
    `${paths.join(', ')}: ${paths.length === 1 ? 'exists' : 'exist'}; a package is never written over (one handed out may be read while it changes): remove ${paths.length === 1 ? 'it' : 'them'} or choose another --to`,
    { context: { file: paths[0] ?? '' } },
  );
}

/**
 * A local folder to build packages in: beside them for a local folder (a rename moves one into
 * place), else in the system's temporary folder (or `scratchDir`).
 */
export async function buildFolder(target: Storage, scratchDir?: string): Promise<string> {
  if (isObjectStorage(target.location)) return mkdtemp(join(scratchDir ?? tmpdir(), 'study-export-share-'));
  await mkdir(target.location, { recursive: true });
  return mkdtemp(join(target.location, '.study-export-share-'));
}

/** Delivers the package built in `built` (its files `files`) as `name`; resolves with where it is. */
export async function deliver(
  target: Storage,
  name: string,
  form: PackageForm,
  built: string,
  files: readonly WrittenFile[],
): Promise<string> {
  const local = (file: WrittenFile) => join(built, ...file.path.split('/'));
  if (form === 'zip') {
    const path = entryName(name, form);
    const zip = new ZipWriter(target.describe(path), await target.create(path));
    try {
      for (const file of files) await zip.add(`${name}/${file.path}`, { kind: 'file', path: local(file) });
      await zip.finish();
    } catch (error) {
      await zip.abort();
      throw error;
    }
    return target.describe(path);
  }
  if (await target.moveFolderIn(built, name)) return target.describe(name);
  if (!isObjectStorage(target.location)) throw existsError([target.describe(name)]);
  const last = files.filter((file) => file.path === DATAPACKAGE_FILE);
  for (const file of [...files.filter((f) => f.path !== DATAPACKAGE_FILE), ...last])
    await target.moveIn(local(file), `${name}/${file.path}`);
  return target.describe(name);
}
