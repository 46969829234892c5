/** Resolves at the first SIGINT or SIGTERM: how a command that serves until stopped waits. */
export function untilStopped(): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
