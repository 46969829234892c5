/**
 * File-system errors in plain words, from real failing calls (no made-up errno objects):
 * a full disk (/dev/full), a path through a file, a folder read as a file, a permission
 * refused by the kernel.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SystemError } from '../../src/errors.ts';
import { makeDirectory } from '../../src/util/fs.ts';
import { describeSystemError } from '../../src/util/system-errors.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'study-export-syserr-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function failure(action: () => Promise<unknown>): Promise<unknown> {
  return action().then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: unknown) => error,
  );
}

/** A path no process may create, root included, or a folder this user cannot write. */
async function forbiddenFolder(): Promise<string> {
  if (process.getuid?.() === 0) return '/sys/study-export-test/out';
  const { chmod, mkdir } = await import('node:fs/promises');
  const locked = join(dir, 'locked');
  await mkdir(locked);
  await chmod(locked, 0o500);
  return join(locked, 'out');
}

describe('describeSystemError', () => {
  it('a full disk is named as a full disk, exit 1 even for a configured path', async () => {
    const error = await failure(() => writeFile('/dev/full', 'x'));
    expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
    const described = describeSystemError(error, { what: 'state file', path: '/dev/full', configured: true });
    expect(described).toBeInstanceOf(SystemError);
    expect((described as SystemError).message).toBe(
      'state file: the disk is full: no space left on the device holding /dev/full',
    );
    expect((described as SystemError).exitCode).toBe(1);
  });

  it('a path through a file: exit 2 when the path is configured, 1 when it is not', async () => {
    const file = join(dir, 'a-file');
    await writeFile(file, 'x');
    const error = await failure(() => readFile(join(file, 'state.json')));
    const configured = describeSystemError(error, { what: 'state file', configured: true }) as SystemError;
    expect(configured.message).toBe(
      `state file: ${join(file, 'state.json')}: a part of this path is a file, not a folder`,
    );
    expect(configured.exitCode).toBe(2);
    expect((describeSystemError(error) as SystemError).exitCode).toBe(1);
  });

  it('a folder read as a file, a file made as a folder', async () => {
    // A read on an open folder carries no path: the caller's is used.
    const isDir = describeSystemError(await failure(() => readFile(dir)), { path: dir }) as SystemError;
    expect(isDir.message).toBe(`${dir} is a folder, not a file`);
    const file = join(dir, 'b-file');
    await writeFile(file, 'x');
    const exists = describeSystemError(await failure(() => makeDirectory(file))) as SystemError;
    expect(exists.errno).toBe('EEXIST');
    expect(exists.message).toBe(`${file} exists and is not a folder`);
  });

  it('a permission the kernel refuses is said as permission denied, with the path', async () => {
    const folder = await forbiddenFolder();
    const error = describeSystemError(await failure(() => makeDirectory(folder))) as SystemError;
    expect(['EACCES', 'EPERM']).toContain(error.errno);
    expect(error.message).toMatch(/permission denied/);
    expect(error.message).toContain(folder.split('/').slice(0, 3).join('/'));
  });

  it('a read-only file system (EROFS) is named as one, exit 2 for a configured path', () => {
    // A real EROFS needs a read-only mount, which CI runners cannot make without root (an
    // unprivileged user namespace is refused on recent Ubuntu runners): this is the error as
    // Node's fs raises it (libuv's errno -30, its message, code, syscall and path).
    const path = '/mnt/readonly/out/t';
    const error = Object.assign(new Error(`EROFS: read-only file system, mkdir '${path}'`), {
      errno: -30,
      code: 'EROFS',
      syscall: 'mkdir',
      path,
    });
    const configured = describeSystemError(error, { what: 'output folder', configured: true }) as SystemError;
    expect(configured).toBeInstanceOf(SystemError);
    expect(configured.message).toBe(`output folder: read-only file system: ${path} cannot be written`);
    expect(configured.exitCode).toBe(2);
    expect((describeSystemError(error) as SystemError).exitCode).toBe(1);
  });

  it('leaves other errors alone', () => {
    const plain = new Error('something else');
    expect(describeSystemError(plain)).toBe(plain);
  });
});

describe('makeDirectory', () => {
  it('makes every missing level and accepts an existing folder', async () => {
    const deep = join(dir, 'x', 'y', 'z');
    await makeDirectory(deep);
    await makeDirectory(deep);
    await writeFile(join(deep, 'f'), 'ok');
    expect(await readFile(join(deep, 'f'), 'utf8')).toBe('ok');
  });

  it('reports the failing level’s own error, not ENOENT, for a missing path under a forbidden folder', async () => {
    const folder = await forbiddenFolder();
    const error = (await failure(() => makeDirectory(join(folder, 'a', 'b')))) as NodeJS.ErrnoException;
    expect(['EACCES', 'EPERM']).toContain(error.code);
  });
});
