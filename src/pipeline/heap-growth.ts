/**
 * How far V8 lets the heap grow past its live data before the next full collection. An export
 * keeps little alive for long (a listing page, a study's blocks), and V8's own choice (60 %
 * under the bin's 1 GiB limit) let a 50k-response export peak 15-20 MB higher than 15 % does,
 * in about the same time. A replay keeps much more alive, and 15 % slowed it by a fifth, so it
 * keeps V8's choice (bench/README.md has the figures). The flag is the process's and V8 reads
 * it at each collection: an export sets it as it starts.
 */
import { setFlagsFromString } from 'node:v8';

export function growHeapSlowly(): void {
  setFlagsFromString('--heap-growing-percent=15');
}
