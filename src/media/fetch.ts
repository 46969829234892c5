/** Fetching one job's file: the job-bound download every job kind uses, and plain files. */
import type { DownloadedFile, DownloadOptions, SignedLink } from './download.ts';
import type { ResponseLinks } from './links.ts';
import { extensionFor, mediaEntryName } from './names.ts';
import type { FetchedJob, MediaJob } from './types.ts';

/**
 * Downloads one link for the job at hand (its temporary files, the memory budget, the
 * stage's retry counts); `refresh` gives a fresh link when the host refuses this one.
 */
export type FetchLink = (link: SignedLink, refresh: DownloadOptions['refresh']) => Promise<DownloadedFile>;

/** An audio or MP4 file: one download, one entry named after the job and its content type. */
export async function fetchFile(
  job: MediaJob,
  links: ResponseLinks,
  fetchLink: FetchLink,
): Promise<FetchedJob> {
  const fetched = await fetchLink(links.current(job.turn, job.kind), (stale) =>
    links.fresh(stale, job.turn, job.kind),
  );
  const file = mediaEntryName(
    job.link_id,
    job.response_id,
    job.turn,
    job.kind,
    extensionFor(fetched.contentType),
  );
  return {
    file,
    contentType: fetched.contentType,
    bytes: fetched.bytes,
    sha256: fetched.sha256,
    entries: [{ name: file, body: fetched.body, bytes: fetched.bytes }],
  };
}
