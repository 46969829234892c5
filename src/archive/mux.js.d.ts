/** The parts of mux.js (no types of its own) that the archive's browser copies use. */
declare module 'mux.js/cjs/mp4/transmuxer.js' {
  export interface TransmuxedSegment {
    type: 'combined' | 'video' | 'audio';
    /** ftyp and moov for the tracks seen so far. */
    initSegment: Uint8Array;
    /** moof and mdat boxes of the samples flushed. */
    data: Uint8Array;
  }
  export class Transmuxer {
    constructor(options?: { remux?: boolean; keepOriginalTimestamps?: boolean });
    on(event: 'data', listener: (segment: TransmuxedSegment) => void): void;
    on(event: string, listener: (value: unknown) => void): void;
    push(bytes: Uint8Array): void;
    flush(): void;
  }
}

declare module 'mux.js/cjs/m2ts/probe.js' {
  /** 'pat' for PID 0, 'pmt' for the program map's PID, 'pes' for others once it is known. */
  export function parseType(packet: Uint8Array, pmtPid: number | undefined): 'pat' | 'pmt' | 'pes' | null;
  /** The program map's PID, from a PAT packet. */
  export function parsePat(packet: Uint8Array): number;
  /** Elementary PID to stream type, from a PMT packet (undefined for a PMT not yet in force). */
  export function parsePmt(packet: Uint8Array): Record<number, number> | undefined;
}
