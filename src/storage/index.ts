/**
 * Opens the storage a location names: `s3://bucket/prefix` is S3-compatible object storage
 * (the AWS SDK is loaded only then, so local runs do not pay its start-up), anything else a
 * local folder.
 */
import { LocalStorage } from './local.ts';
import type { Storage } from './types.ts';

export type { OutputFile, StagedFolder, Storage, StoredFile } from './types.ts';

import type { S3Settings } from './s3.ts';

export type { S3Settings } from './s3.ts';

export function isObjectStorage(location: string): boolean {
  return /^s3:\/\//i.test(location);
}

/** `name` inside `location`, for either kind. */
export function locationOf(location: string, ...names: string[]): string {
  if (!isObjectStorage(location)) return new LocalStorage(location).at(names.join('/')).location;
  return [location.replace(/\/+$/, ''), ...names].join('/');
}

export async function openStorage(location: string, s3: S3Settings = {}): Promise<Storage> {
  if (!isObjectStorage(location)) return new LocalStorage(location);
  // The SDK's notice that its releases from 2027 need Node 22 is not this tool's user's
  // business on every run; its own opt-out silences exactly that notice.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { openS3Storage } = await import('./s3.ts');
  return openS3Storage(location, s3);
}
