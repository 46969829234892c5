import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';

/** sha256 (hex) and size of a file, streamed. */
export async function hashFile(path: string): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(path)) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), bytes };
}

/**
 * mkdir -p that reports the real reason. Node's `mkdir(path, { recursive: true })` turns
 * EROFS, ENOSPC and EACCES into ENOENT (nodejs/node#47098); one level at a time, the
 * failing level's own error comes through.
 */
export async function makeDirectory(path: string): Promise<void> {
  try {
    await mkdir(path);
    return;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' && (await isDirectory(path))) return;
    if (code !== 'ENOENT' || dirname(path) === path) throw error;
  }
  await makeDirectory(dirname(path));
  try {
    await mkdir(path);
  } catch (error) {
    // Made meanwhile by someone else: fine, if it is a folder.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !(await isDirectory(path))) throw error;
  }
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (stats) => stats.isDirectory(),
    () => false,
  );
}
