/**
 * The entry point: bin/study-export.js imports this file (through tsx), which parses
 * process.argv and exits with the command's code.
 */
import { hideBin } from 'yargs/helpers';
import { main } from './cli/main.ts';

const code = await main({
  argv: hideBin(process.argv),
  env: process.env,
  cwd: process.cwd(),
  stdout: process.stdout,
  stderr: process.stderr,
  exitCode: 0,
  // From the process's start (node's own clock), so the summary's time is the command's.
  elapsedMs: () => performance.now(),
});
// Let stdout drain, then leave even if a library kept a handle open.
process.exitCode = code;
process.stdout.write('', () => process.exit(code));
