/** The sandbox's injectable clock: signing and expiry read it, tests move it. */
export interface Clock {
  now(): number;
  advance(ms: number): void;
  set(ms: number): void;
}

/** A clock that starts at `startMs` and follows real time until a test sets or advances it. */
export function createClock(startMs: number): Clock {
  let offset = startMs - Date.now();
  return {
    now: () => Date.now() + offset,
    advance: (ms) => {
      offset += ms;
    },
    set: (ms) => {
      offset = ms - Date.now();
    },
  };
}
