/**
 * The pipeline's lease on object storage (s3.ts): an object naming its run and an expiry. One
 * whose expiry has passed, or whose run was on this machine and is gone, was left by a run
 * that died.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { BusyError } from '../errors.ts';
import { isProcessAlive } from '../util/exit-cleanup.ts';
import { holderText, outputBusy } from './lease-holder.ts';
import type { Lease, LeaseState, Storage } from './types.ts';

/** A lease is good for this long and renewed at a third of it while the run lives. */
const LEASE_MS = 10 * 60 * 1000;

/** What a lease needs of the storage. */
type LeaseStore = Pick<Storage, 'read' | 'put' | 'putIfAbsent' | 'delete' | 'describe'>;

/**
 * An object holding the owner and an expiry, created with If-None-Match: * so that of two
 * runs starting together only one gets it. Servers that ignore the condition (s3rver)
 * only have the read before the write (docs/object-storage.md). Renewed while the run lives; one whose
 * expiry has passed was left by a run that died and is taken over.
 */
export async function takeLease(store: LeaseStore, path: string): Promise<Lease> {
  const owner = `${hostname()}:${process.pid}:${randomUUID()}`;
  const since = new Date().toISOString();
  const content = () =>
    `${JSON.stringify({ owner, host: hostname(), pid: process.pid, since, expires_at: new Date(Date.now() + LEASE_MS).toISOString() })}\n`;
  let taken = false;
  for (let attempt = 0; attempt < 2 && !taken; attempt++) {
    const held = await store.read(path);
    if (held !== null) {
      const holder = parseLease(held);
      if (holder && isLive(holder)) {
        throw outputBusy(
          store.describe(path),
          describeHolder(holder),
          'try again once it has finished, or delete that object if that run is dead',
        );
      }
      // Its run died without releasing it: expired, or its process on this machine is gone.
      await store.delete(path);
    }
    taken = await store.putIfAbsent(path, content());
  }
  if (!taken) {
    throw new BusyError(
      `could not take the lease ${store.describe(path)}: another run took it; try again later`,
      {
        context: { file: store.describe(path) },
      },
    );
  }
  const renewal = setInterval(() => {
    store.put(path, content()).catch(() => {});
  }, LEASE_MS / 3);
  renewal.unref();
  return {
    release: async () => {
      clearInterval(renewal);
      const held = await store.read(path);
      if (held !== null && parseLease(held)?.owner === owner) await store.delete(path);
    },
  };
}

export async function leaseStateOf(store: LeaseStore, path: string): Promise<LeaseState> {
  const held = await store.read(path);
  if (held === null) return { held: 'no' };
  const holder = parseLease(held);
  if (!holder || !isLive(holder)) return { held: 'dead' };
  return { held: 'live', by: describeHolder(holder) };
}

/** "process 4242 on build-7 since …, its lease good until …". */
function describeHolder(holder: LeaseObject): string {
  const host = holder.host === 'undefined' ? null : holder.host;
  return `${holderText({ pid: holder.pid, host, since: holder.since })}, its lease good until ${holder.expires_at}`;
}

interface LeaseObject {
  owner: string;
  host: string;
  pid: number;
  /** When the run took it; null in a lease of an earlier version. */
  since: string | null;
  expires_at: string;
}

function parseLease(bytes: Buffer): LeaseObject | null {
  try {
    const parsed = JSON.parse(bytes.toString('utf8')) as Partial<LeaseObject>;
    if (typeof parsed.owner === 'string' && typeof parsed.expires_at === 'string') {
      return {
        owner: parsed.owner,
        host: String(parsed.host),
        pid: Number(parsed.pid),
        since: typeof parsed.since === 'string' ? parsed.since : null,
        expires_at: parsed.expires_at,
      };
    }
  } catch {}
  return null;
}

/** Not expired, and, when its run was on this machine, that process still exists. */
function isLive(holder: LeaseObject): boolean {
  if (Date.parse(holder.expires_at) <= Date.now()) return false;
  if (holder.host !== hostname() || holder.pid === process.pid) return true;
  return Number.isInteger(holder.pid) && isProcessAlive(holder.pid);
}
