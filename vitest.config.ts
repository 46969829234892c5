import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests start their own sandboxes on port 0, so files can run in parallel.
    pool: 'forks',
  },
});
