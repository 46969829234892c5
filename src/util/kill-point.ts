/**
 * Named points where a test of crash safety has the process killed (SIGKILL, as by the OOM
 * killer or a cancelled CI job): STUDY_EXPORT_KILL_AT=<name>; or stopped (SIGSTOP) until the
 * test has changed the world around it (filled the disk) and lets it go on (SIGCONT):
 * STUDY_EXPORT_STOP_AT=<name>. Steps that take a millisecond cannot be hit reliably from
 * outside; the guarantee after them still has to hold.
 */
export function killPoint(name: string): void {
  if (process.env.STUDY_EXPORT_KILL_AT === name) process.kill(process.pid, 'SIGKILL');
  if (process.env.STUDY_EXPORT_STOP_AT === name) process.kill(process.pid, 'SIGSTOP');
}
