/**
 * `${VAR}` and `${VAR:-default}` in the string values of a parsed pipeline file.
 * Keys are never interpolated. A value that is exactly one placeholder and resolves to an
 * integer or a boolean becomes that scalar, so `per_page: ${PER_PAGE:-1000}` is a number.
 */
import { formatPath, type KeyPath } from './paths.ts';

/** Thrown with the key path; load.ts adds the file name and wraps it in a ConfigError. */
export class InterpolationError extends Error {
  constructor(
    readonly path: KeyPath,
    message: string,
  ) {
    super(message);
  }
}

const placeholder = /\$\{([^}]*)\}/g;
const variableName = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function interpolate(value: unknown, env: NodeJS.ProcessEnv, path: KeyPath = []): unknown {
  if (typeof value === 'string') return interpolateString(value, env, path);
  if (Array.isArray(value)) return value.map((item, index) => interpolate(item, env, [...path, index]));
  if (value !== null && typeof value === 'object') {
    const result: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) result[key] = interpolate(item, env, [...path, key]);
    return result;
  }
  return value;
}

function interpolateString(text: string, env: NodeJS.ProcessEnv, path: KeyPath): unknown {
  if (!text.includes('${')) return text;
  const replaced = text.replace(placeholder, (_match, body: string) => resolvePlaceholder(body, env, path));
  if (replaced.includes('${')) {
    throw new InterpolationError(path, `unterminated "\${" in ${JSON.stringify(text)}`);
  }
  const wholeValue = /^\$\{[^}]*\}$/.test(text);
  return wholeValue ? toScalar(replaced) : replaced;
}

function resolvePlaceholder(body: string, env: NodeJS.ProcessEnv, path: KeyPath): string {
  const separator = body.indexOf(':-');
  const name = separator === -1 ? body : body.slice(0, separator);
  if (!variableName.test(name)) {
    throw new InterpolationError(
      path,
      `"\${${body}}" is not a valid placeholder (expected \${NAME} or \${NAME:-default})`,
    );
  }
  const current = env[name];
  // As in the shell, ":-" also applies when the variable is set but empty.
  if (separator !== -1) return current === undefined || current === '' ? body.slice(separator + 2) : current;
  if (current === undefined) {
    throw new InterpolationError(
      path,
      `environment variable ${name} is not set (set it, or write \${${name}:-default} in ${formatPath(path)})`,
    );
  }
  return current;
}

function toScalar(text: string): unknown {
  if (/^-?\d+$/.test(text)) return Number(text);
  if (text === 'true') return true;
  if (text === 'false') return false;
  return text;
}
