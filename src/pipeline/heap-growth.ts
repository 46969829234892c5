/**
 * How far V8 lets the heap grow past its live data before the next full collection. An export
 * keeps little alive for long (a listing page, a study's blocks), and with V8's own choice a
 * large export peaked well above what it needs; a smaller step costs it little time. A replay
 * keeps much more alive and collects it far more often with the smaller step, so it keeps V8's
 * choice (bench/README.md has the figures). The flag is the process's and V8 reads it at each
 * collection: an export sets it as it starts.
 */
import { setFlagsFromString } from 'node:v8';

export function growHeapSlowly(): void {
  setFlagsFromString('--heap-growing-percent=15');
}
