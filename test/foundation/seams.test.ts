import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// The folder rules of eslint.config.js, asked of a one-line probe placed (virtually) in each folder: a config change
// that drops a rule fails here, not only in a review.
async function restricted(filePath: string, code: string): Promise<string[]> {
  const [result] = await new ESLint().lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

/** The messages of the rule that forbids require() and import() of a package's files by path. */
async function bySyntax(filePath: string, code: string): Promise<string[]> {
  const [result] = await new ESLint().lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-syntax').map((m) => m.message);
}

describe('public library APIs only (eslint.config.js)', () => {
  // One file in each block that sets no-restricted-imports: a later block replaces an earlier one's patterns.
  const files = [
    'src/payments/probe.ts',
    'src/payments/routes.ts',
    'src/ordering/service.ts',
    'src/reseller-auth/auth.ts',
    'src/ops/metrics.ts',
    'src/catalog/routes.ts',
    'src/shared/probe.ts',
    'src/http/probe.ts',
    'test/probe.test.ts',
    'bench/probe.ts',
    'scripts/probe.mjs',
  ];

  it("refuses an import of a package's private files in every folder", async () => {
    const deep = [
      "import Modes from 'qrcode/lib/core/mode.js';\nexport const x = Modes;\n",
      "import { hashObject } from 'prom-client/lib/util.js';\nexport const x = hashObject;\n",
      "import symbols from 'pino/lib/symbols.js';\nexport const x = symbols;\n",
      "import { x as y } from '@scope/pkg/dist/esm/index.js';\nexport const x = y;\n",
      "import { x as y } from 'some-package/src/internal.js';\nexport const x = y;\n",
    ];
    for (const file of files) for (const code of deep) expect(await restricted(file, code), `${file}: ${code}`).toHaveLength(1);
  });

  it('lets public entry points, public subpaths and our own relative paths through', async () => {
    const code = [
      "import QRCode from 'qrcode';",
      "import { pgTable } from 'drizzle-orm/pg-core';",
      "import { migrate } from 'drizzle-orm/pglite/migrator';",
      "import type { Dispatcher } from 'undici/types';",
      "import { tsImport } from 'tsx/esm/api';",
      "import fs from 'node:fs/promises';",
      "import { x } from './lib/x.js';",
      "import { y } from './src/y.js';",
      'export const all = [QRCode, pgTable, migrate, tsImport, fs, x, y];',
      'export type D = Dispatcher;',
      '',
    ].join('\n');
    for (const file of files) expect(await restricted(file, code), file).toEqual([]);
  });

  it("refuses require() of a package's file by path, and require.resolve() or import() of a private file", async () => {
    const req = "import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\n";
    for (const file of ['src/payments/probe.ts', 'src/ops/probe.ts', 'test/probe.test.ts']) {
      expect(await bySyntax(file, `${req}export const m = require('qrcode/lib/core/mode.js');\n`), file).toHaveLength(1);
      expect(await bySyntax(file, `${req}export const m = require('@fastify/rate-limit/store/LocalStore.js');\n`), file).toHaveLength(1);
      expect(await bySyntax(file, `${req}export const m = require.resolve('prom-client/lib/counter.js');\n`), file).toHaveLength(1);
      expect(await bySyntax(file, "export const m = await import('pino/lib/symbols.js');\n"), file).toHaveLength(1);
      // The package itself, our own files and a public subpath stay allowed.
      const allowed = `${req}export const m = [require('qrcode'), require.resolve('@electric-sql/pglite'), await import('./lib/x.js'), await import('drizzle-orm/pglite')];\n`;
      expect(await bySyntax(file, allowed), file).toEqual([]);
    }
  });
});

describe('module seams (eslint.config.js)', () => {
  it('payments/ may not import ordering/, nor ordering/ payments/; both may import the platform', async () => {
    expect(
      await restricted('src/payments/probe.ts', "import { userOf } from '../ordering/auth.js';\nexport const x = userOf;\n"),
    ).toHaveLength(1);
    expect(
      await restricted('src/payments/probe.ts', "import { userOf } from '../reseller-auth/auth.js';\nexport const x = userOf;\n"),
    ).toHaveLength(1);
    expect(
      await restricted('src/ordering/probe.ts', "import { payClientOf } from '../payments/auth.js';\nexport const x = payClientOf;\n"),
    ).toHaveLength(1);
    expect(
      await restricted(
        'src/payments/probe.ts',
        "import { installRateLimit } from '../http/rate-limit.js';\nexport const x = installRateLimit;\n",
      ),
    ).toEqual([]);
  });

  it('shared/ imports nothing from the project, only packages and its own files', async () => {
    expect(
      await restricted('src/shared/probe.ts', "import { AppError } from '../http/errors.js';\nexport const x = AppError;\n"),
    ).toHaveLength(1);
    expect(
      await restricted(
        'src/shared/probe.ts',
        "import { sql } from 'drizzle-orm';\nimport { normalizeIp } from './ip.js';\nexport const x = [sql, normalizeIp];\n",
      ),
    ).toEqual([]);
  });

  it('http/ imports nothing from db/; it may import shared/', async () => {
    for (const code of [
      "import { raisedByDatabasePool } from '../db/client.js';\nexport const x = raisedByDatabasePool;\n",
      "import { orders } from '../db/schema/index.js';\nexport const x = orders;\n",
      "import type { Db } from '../db/client.js';\nexport type X = Db;\n",
    ])
      expect(await restricted('src/http/probe.ts', code), code).toHaveLength(1);
    expect(
      await restricted('src/http/probe.ts', "import { sqlStateOf } from '../shared/db-errors.js';\nexport const x = sqlStateOf;\n"),
    ).toEqual([]);
  });

  it('a service module may not build an AppError; its route file and the admin edge may', async () => {
    const probe = "import { AppError, errorResponses } from '../http/errors.js';\nexport const x = [AppError, errorResponses];\n";
    for (const file of ['src/users/probe.ts', 'src/catalog/admin.ts', 'src/sync/probe.ts', 'src/ops/backup.ts', 'src/jobs/cron.ts'])
      expect(await restricted(file, probe), file).toHaveLength(1);
    for (const file of ['src/catalog/routes.ts', 'src/jobs/routes.ts', 'src/admin/upload.ts', 'src/http/probe.ts'])
      expect(await restricted(file, probe), file).toEqual([]);
    expect(
      await restricted('src/users/probe.ts', "import { errorResponses } from '../http/errors.js';\nexport const x = errorResponses;\n"),
    ).toEqual([]);
  });

  it('the ordering and payment services may not build an AppError either; their routes and request hooks may', async () => {
    const probe = "import { AppError, fieldError } from '../http/errors.js';\nexport const x = [AppError, fieldError];\n";
    const services = [
      'src/ordering/service.ts',
      'src/ordering/delivery.ts',
      'src/ordering/create-order-fn.ts',
      'src/ordering/probe.ts',
      'src/payments/create.ts',
      'src/payments/clients.ts',
      'src/payments/methods.ts',
      'src/payments/lifecycle.ts',
      'src/payments/bank-feeds.ts',
      'src/payments/probe.ts',
    ];
    // One message for each name: AppError and fieldError.
    for (const file of services) expect(await restricted(file, probe), file).toHaveLength(2);
    const edge = [
      'src/ordering/routes.ts',
      'src/ordering/order-routes.ts',
      'src/reseller-auth/auth.ts',
      'src/reseller-auth/signing.ts',
      'src/ordering/rate-limit.ts',
      'src/payments/routes.ts',
      'src/payments/bank-feed-routes.ts',
      'src/payments/auth.ts',
    ];
    for (const file of edge) expect(await restricted(file, probe), file).toEqual([]);
    // The service rule replaces the family rule for these files: it must still refuse the other family.
    const both = (other: string) =>
      `import { AppError } from '../http/errors.js';\nimport { x as y } from '../${other}/auth.js';\nexport const x = [AppError, y];\n`;
    expect(await restricted('src/payments/create.ts', both('ordering'))).toHaveLength(2);
    expect(await restricted('src/ordering/service.ts', both('payments'))).toHaveLength(2);
    expect(await restricted('src/payments/routes.ts', both('ordering'))).toHaveLength(1);
    expect(await restricted('src/reseller-auth/auth.ts', both('payments'))).toHaveLength(1);
  });
});
