#!/usr/bin/env node
// The package's bin. The CLI is TypeScript run through tsx (no build step); the import below resolves from this
// file, not from the current directory, so the command works wherever it is run.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/admin/cli.ts');
await main();
