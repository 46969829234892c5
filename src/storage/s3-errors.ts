/** S3 failures in plain words (s3.ts), naming the object; never a credential. */
import type { S3ServiceException } from '@aws-sdk/client-s3';
import { ConfigError, RunError, type StudyExportError } from '../errors.ts';

export type Operation = 'read' | 'write' | 'list' | 'delete';

/** A storage failure in plain words, naming the object; never a credential. */
export function storageError(error: unknown, operation: Operation, where: string): StudyExportError {
  if (error instanceof RunError || error instanceof ConfigError) return error;
  const name = (error as { name?: string }).name ?? '';
  const status = (error as S3ServiceException).$metadata?.httpStatusCode;
  const reason = error instanceof Error ? error.message : String(error);
  const context = { file: where, operation: `storage ${operation}`, ...(status ? { status } : {}) };
  const bucket = where.replace(/^(s3:\/\/[^/]+).*$/, '$1');
  if (name === 'NoSuchBucket') {
    return new ConfigError(`${bucket}: the bucket does not exist (check output.dir and the endpoint)`, {
      context,
      cause: error,
    });
  }
  if (
    ['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'AccessDenied', 'ExpiredToken', 'InvalidToken'].includes(
      name,
    ) ||
    status === 401 ||
    status === 403
  ) {
    return new ConfigError(
      `${where}: the storage refused the credentials (${name || status}); check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE, and the bucket's permissions`,
      { context, cause: error },
    );
  }
  if (name === 'CredentialsProviderError') {
    return new ConfigError(
      `${where}: no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE`,
      { context, cause: error },
    );
  }
  if (status !== undefined && status >= 500) {
    return new RunError(
      `${where}: the storage answered ${status} (${name}) to a ${operation}, after retries`,
      {
        context,
        cause: error,
      },
    );
  }
  const code = (error as NodeJS.ErrnoException).code;
  if (code || name === 'TimeoutError') {
    return new RunError(
      `${where}: cannot reach the storage (${code ?? name}); check output.s3.endpoint or AWS_ENDPOINT_URL and your network`,
      { context, cause: error },
    );
  }
  return new RunError(`${where}: storage ${operation} failed: ${reason}`, { context, cause: error });
}

export function isMissing(error: unknown): boolean {
  const name = (error as { name?: string }).name;
  return name === 'NoSuchKey' || name === 'NotFound';
}
