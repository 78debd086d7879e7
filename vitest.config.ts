import { defineConfig } from 'vitest/config';

// Two cores: two forks. Each test file boots its own app(s) on its own database (PGlite snapshot or a fresh
// PostgreSQL database cloned from a migrated template).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
