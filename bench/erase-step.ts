/** The erase bench's measured step: one `eraseResponses` on a local output, timed from inside. */
import { eraseResponses } from '../src/erase/index.ts';

export async function eraseStep(input: {
  output: string;
  response: string;
}): Promise<{ ms: number; rows: number }> {
  const started = performance.now();
  const result = await eraseResponses({ output: input.output, choice: { responses: [input.response] } });
  const ms = performance.now() - started;
  return { ms, rows: result.erasure.runs.reduce((sum, run) => sum + run.rows, 0) };
}
