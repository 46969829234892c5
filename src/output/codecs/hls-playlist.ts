/**
 * An HLS playlist as text: its segment references (and init or key files) in order, a master
 * playlist's variants, and the text with each reference replaced by a local name. The media
 * stage rewrites what it downloads with it; a handoff reads a stored recording's playlist with it.
 */

export interface PlaylistReference {
  /** Index of the line holding the URI. */
  line: number;
  uri: string;
  /** True when the URI sits in a tag's URI="..." attribute (EXT-X-MAP, EXT-X-KEY). */
  attribute: boolean;
}

export interface ParsedPlaylist {
  lines: string[];
  /** Media playlist: segments (and init/key files), in order. */
  references: PlaylistReference[];
  /** Master playlist: the variant stream URIs with their bandwidth. */
  variants: { uri: string; bandwidth: number }[];
}

const uriAttribute = /URI="([^"]*)"/;

function bandwidthOf(tag: string): number {
  const match = /[:,]BANDWIDTH=(\d+)/.exec(tag);
  return match?.[1] ? Number(match[1]) : 0;
}

export function parsePlaylist(text: string): ParsedPlaylist {
  const lines = text.split(/\r?\n/);
  const references: PlaylistReference[] = [];
  const variants: ParsedPlaylist['variants'] = [];
  let variantTag: string | null = null;
  lines.forEach((raw, index) => {
    const line = raw.trim();
    if (line === '') return;
    if (line.startsWith('#')) {
      if (line.startsWith('#EXT-X-STREAM-INF')) variantTag = line;
      else if (/^#EXT-X-(MAP|KEY)[:]/.test(line)) {
        const uri = uriAttribute.exec(line)?.[1];
        if (uri && !/METHOD=NONE/.test(line)) references.push({ line: index, uri, attribute: true });
      }
      return;
    }
    if (variantTag !== null) {
      variants.push({ uri: line, bandwidth: bandwidthOf(variantTag) });
      variantTag = null;
    } else {
      references.push({ line: index, uri: line, attribute: false });
    }
  });
  return { lines, references, variants };
}

/** The variant a master playlist offers at the highest bandwidth. */
export function bestVariant(playlist: ParsedPlaylist): string | null {
  let best: ParsedPlaylist['variants'][number] | null = null;
  for (const variant of playlist.variants) if (!best || variant.bandwidth > best.bandwidth) best = variant;
  return best?.uri ?? null;
}

/** The playlist text with reference i replaced by localNames[i]. */
export function rewritePlaylist(playlist: ParsedPlaylist, localNames: string[]): string {
  const lines = [...playlist.lines];
  playlist.references.forEach((reference, i) => {
    const local = localNames[i];
    if (local === undefined) throw new RangeError(`no local name for playlist reference ${i}`);
    const line = lines[reference.line] ?? '';
    lines[reference.line] = reference.attribute ? line.replace(uriAttribute, `URI="${local}"`) : local;
  });
  return lines.join('\n');
}
