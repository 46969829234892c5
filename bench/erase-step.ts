/**
 * The erase bench's measured step: one `eraseResponses` on a local output, timed from inside,
 * with the process's CPU time (every thread's: the lanes' hashing threads included).
 */
import { eraseResponses } from '../src/erase/index.ts';

export async function eraseStep(input: {
  output: string;
  response: string;
}): Promise<{ ms: number; cpu_s: number; rows: number }> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await eraseResponses({ output: input.output, choice: { responses: [input.response] } });
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return {
    ms,
    cpu_s: (used.user + used.system) / 1e6,
    rows: result.erasure.runs.reduce((sum, run) => sum + run.rows, 0),
  };
}
