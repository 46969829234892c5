/**
 * Faults on demand. A spec is a comma-separated list of `name=value`:
 *   5xx=0.1  429=0.05  reset=0.02  truncate=0.02   probabilities per API request
 *   latency=20ms                                   extra latency on every API request
 *   retry_after=1s                                 Retry-After sent with 429 (default 1 s)
 *   max_in_flight=4                                a rate limit that depends on load: requests
 *                                                  beyond 4 in flight at once get 429
 *   media_5xx, media_429, media_reset, media_truncate, media_latency
 *                                                  the same for the storage and stream listeners
 * Draws come from a seeded PRNG per listener, so a given seed and request order always
 * meets the same faults.
 */
import { ConfigError } from '../errors.ts';
import { type Random, randomFor } from './prng.ts';

export interface FaultRates {
  /** Probability of a 500 or 503. */
  '5xx': number;
  /** Probability of a 429 with Retry-After. */
  '429': number;
  /** Probability of a connection destroyed without any response. */
  reset: number;
  /** Probability of a body cut in half after a full Content-Length. */
  truncate: number;
  /** Extra latency on every request. */
  latencyMs: number;
  /** Requests in flight at once beyond which the listener answers 429; 0 = no limit. */
  maxInFlight: number;
}

export interface FaultSpec {
  api: FaultRates;
  media: FaultRates;
  retryAfterSeconds: number;
}

export type Fault = 'none' | '500' | '503' | '429' | 'reset' | 'truncate';

const rateNames = ['5xx', '429', 'reset', 'truncate'] as const;

export function noFaults(): FaultSpec {
  return { api: emptyRates(), media: emptyRates(), retryAfterSeconds: 1 };
}

function emptyRates(): FaultRates {
  return { '5xx': 0, '429': 0, reset: 0, truncate: 0, latencyMs: 0, maxInFlight: 0 };
}

/** Parses a fault spec; throws ConfigError naming the part that is wrong. */
export function parseFaults(spec: string): FaultSpec {
  const faults = noFaults();
  for (const rawPart of spec.split(',')) {
    const part = rawPart.trim();
    if (part === '') continue;
    const eq = part.indexOf('=');
    if (eq < 0) throw new ConfigError(`faults: "${part}" is not name=value`);
    applyPart(faults, part.slice(0, eq).trim(), part.slice(eq + 1).trim(), part);
  }
  for (const [scope, rates] of [
    ['api', faults.api],
    ['media', faults.media],
  ] as const) {
    const total = rateNames.reduce((sum, name) => sum + rates[name], 0);
    if (total > 1)
      throw new ConfigError(`faults: the ${scope} probabilities add up to ${total}, more than 1`);
  }
  return faults;
}

function applyPart(faults: FaultSpec, name: string, value: string, part: string): void {
  if (name === 'retry_after') {
    faults.retryAfterSeconds = parseDuration(value, 's', part);
    return;
  }
  const media = name.startsWith('media_');
  const rates = media ? faults.media : faults.api;
  const base = media ? name.slice('media_'.length) : name;
  if (base === 'latency') {
    rates.latencyMs = parseDuration(value, 'ms', part);
    return;
  }
  if (base === 'max_in_flight') {
    const count = Number(value);
    if (!Number.isInteger(count) || count < 1) {
      throw new ConfigError(`faults: "${part}" needs a whole number of requests, 1 or more`);
    }
    rates.maxInFlight = count;
    return;
  }
  if (!(rateNames as readonly string[]).includes(base)) {
    throw new ConfigError(
      `faults: unknown fault "${name}" in "${part}" (expected 5xx, 429, reset, truncate, latency, max_in_flight, retry_after, or media_ + one of them)`,
    );
  }
  const probability = Number(value);
  if (value === '' || !Number.isFinite(probability) || probability < 0 || probability > 1) {
    throw new ConfigError(`faults: "${part}" needs a probability between 0 and 1`);
  }
  rates[base as (typeof rateNames)[number]] = probability;
}

/** "20ms", "2s" or a bare number in `unit`; returns the value in that unit. */
function parseDuration(value: string, unit: 'ms' | 's', part: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s)?$/.exec(value);
  if (!match) throw new ConfigError(`faults: "${part}" needs a duration such as 20ms or 1s`);
  const amount = Number(match[1]);
  const given = match[2] ?? unit;
  if (given === unit) return amount;
  return given === 's' ? amount * 1000 : amount / 1000;
}

/** Draws the fault for each request of one listener, deterministically under the seed. */
export class FaultDice {
  private readonly random: Random;

  constructor(seed: number, listener: string) {
    this.random = randomFor(seed, 'faults', listener);
  }

  draw(rates: FaultRates): Fault {
    const roll = this.random();
    const flavour = this.random();
    let edge = rates['5xx'];
    if (roll < edge) return flavour < 0.5 ? '500' : '503';
    edge += rates['429'];
    if (roll < edge) return '429';
    edge += rates.reset;
    if (roll < edge) return 'reset';
    edge += rates.truncate;
    if (roll < edge) return 'truncate';
    return 'none';
  }
}
