import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// The folder rules of eslint.config.js, asked of a one-line probe placed (virtually) in each folder: a config change
// that drops a rule fails here, not only in a review.
async function restricted(filePath: string, code: string): Promise<string[]> {
  const [result] = await new ESLint().lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('module seams (eslint.config.js)', () => {
  it('payments/ may not import ordering/, nor ordering/ payments/; both may import the platform', async () => {
    expect(
      await restricted('src/payments/probe.ts', "import { userOf } from '../ordering/auth.js';\nexport const x = userOf;\n"),
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
      'src/ordering/auth.ts',
      'src/ordering/signing.ts',
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
    expect(await restricted('src/ordering/auth.ts', both('payments'))).toHaveLength(1);
  });
});
