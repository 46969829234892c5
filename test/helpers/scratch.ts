/** Folders in a temporary directory as runs of this and earlier versions leave them. */
import { spawnSync } from 'node:child_process';
import { mkdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** A folder with one file, both last modified `ageMs` ago (the file `fileAgeMs` ago if given). */
export async function folderAged(path: string, ageMs: number, fileAgeMs = ageMs): Promise<void> {
  await mkdir(path);
  await writeFile(join(path, 'spill.jsonl'), '{"id":"r-1","answers":{"Q":"private"}}\n');
  const at = (ms: number) => new Date(Date.now() - ms);
  await utimes(join(path, 'spill.jsonl'), at(fileAgeMs), at(fileAgeMs));
  await utimes(path, at(ageMs), at(ageMs));
}

/** The pid of a process that has exited. */
export function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '']);
  return child.pid!;
}
