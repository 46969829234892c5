/** Globs as the pipeline file writes them (study link_ids, URL-parameter keys). */

/** A glob on a whole name: `*` any run of characters (slashes included), `?` one character. */
export function globToRegExp(glob: string): RegExp {
  let source = '';
  for (const char of glob) {
    if (char === '*') source += '.*';
    else if (char === '?') source += '.';
    else source += char.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 'su');
}
