/** Helpers every test folder uses, written once. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';

/** A temporary folder for `use`, removed afterwards whatever happens. */
export async function withTempDir<T>(use: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'study-export-test-'));
  try {
    return await use(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Media hosts never received the key; returns how many media requests were checked. */
export function expectMediaRequestsKeyless(sandbox: Sandbox, from = 0): number {
  const media = sandbox.requests.slice(from).filter((r) => r.listener !== 'api');
  expect(media.filter((r) => r.x_api_key)).toEqual([]);
  return media.length;
}

/** Changes to the test process's environment, put back as they were by `restore`. */
export class EnvironmentPatch {
  readonly #saved: Record<string, string | undefined> = {};

  set(values: Record<string, string | undefined>): void {
    for (const [name, value] of Object.entries(values)) {
      if (!(name in this.#saved)) this.#saved[name] = process.env[name];
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }

  restore(): void {
    this.set(this.#saved);
  }
}
