import { defineConfig } from 'drizzle-kit';

// Generation only reads the schema files; no database connection is needed.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema/index.ts',
  out: './migrations',
});
