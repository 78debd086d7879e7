import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// Two cores: two forks. Each test file boots its own app(s) on its own database (PGlite snapshot or a fresh
// PostgreSQL database cloned from a migrated template).
export default defineConfig({
  // 'reseller-gateway/webhook-verify' resolves to dist/ under Node; the tests import it by that name and must test the
  // source without a build, as tsconfig.json's customConditions does for the type check (docs/operations.md,
  // "Production build"). test/foundation/compiled.test.ts checks the built file under plain Node.
  ssr: { resolve: { conditions: ['reseller-gateway-source', ...defaultServerConditions] } },
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
