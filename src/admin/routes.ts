import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { CatalogService } from '../catalog/service.js';
import { adminGate } from '../http/admin-gate.js';
import { errorResponses, type ErrorCode } from '../http/errors.js';
import { DEFAULT_VOCABULARY, installErrorVocabulary } from '../http/error-handler.js';
import { API_DOCS, documentRoutes } from '../http/openapi.js';
import type { SettingsService, SettingView } from '../settings/service.js';
import { categorySchema } from '../catalog/schemas.js';
import type { UsersService } from '../users/service.js';
import { seedDemo } from './demo.js';
import { installUploadParsers, uploadedLines } from './upload.js';
import { registerAdminPayRoutes, type AdminPayDeps } from './pay-routes.js';
import { registerAdminWebhookRoutes, type AdminWebhookDeps } from './webhook-routes.js';
import { registerAdminTransactionRoutes, type AdminTransactionDeps } from './transaction-routes.js';
import { registerAdminFileUpload, registerAdminOrderRoutes, type AdminOrderDeps } from './order-routes.js';
import { registerAdminSyncRoutes, type AdminSyncDeps } from './sync-routes.js';
import { registerAdminSandboxRoutes } from './sandbox-routes.js';
import { installAuditHook, registerAdminAuditRoutes, type AdminAuditDeps } from './audit-routes.js';
import { registerAdminBackupRoutes, type AdminBackupDeps } from './backup-routes.js';
import { registerAdminDashboardRoutes, type AdminDashboardDeps } from './dashboard-routes.js';
import {
  adminProduct,
  categoryCreateBody,
  creditBody,
  creditResult,
  demoSeedResult,
  importResult,
  ledgerEntry,
  testListQuery,
  ok,
  productCreateBody,
  productIdParams,
  productUpdateBody,
  setIpsBody,
  settingKeyParams,
  settingSetBody,
  settingView,
  userCallbackBody,
  callbackSecretView,
  userCreateBody,
  userRefParams,
  userView,
} from './schemas.js';

export type AdminDeps = AdminAuditDeps &
  AdminOrderDeps &
  AdminPayDeps &
  AdminWebhookDeps &
  AdminTransactionDeps &
  AdminSyncDeps &
  AdminBackupDeps &
  AdminDashboardDeps & {
    adminToken: string;
    allowedIps: string[];
    uploadMaxBytes: number;
    users: UsersService;
    catalog: CatalogService;
    settings: SettingsService;
  };

/**
 * A secret is shown only by an explicit read of that one setting (GET /admin/v1/settings/:key): a list or the answer
 * to a change lands in terminals, shell history, CI logs and browser pages (docs/configuration.md, "Runtime settings").
 */
export const masked = (s: SettingView): SettingView =>
  s.secret && s.value ? { ...s, value: '********', default: s.default ? '********' : '' } : s;

const ADMIN_ERRORS: ErrorCode[] = ['admin_unauthorized', 'forbidden'];
const ACTOR = 'admin-api';

/** The admin HTTP API (docs/contract.md, "Admin"): loopback-only by default, Bearer ADMIN_TOKEN; the CLI is a thin client of it. */
export async function adminRoutes(app: FastifyInstance, deps: AdminDeps): Promise<void> {
  documentRoutes(app, API_DOCS.admin, ADMIN_ERRORS);
  // Every refusal is answered by its kind (domainErrorAnswer); a subclass that needs a code of its own adds a translator.
  installErrorVocabulary(app, DEFAULT_VOCABULARY);
  app.addHook('onRequest', adminGate(deps));
  // Before any route: every mutating admin route, in this scope and the upload scope, gets its audit row.
  installAuditHook(app, deps.db);
  const r = app.withTypeProvider<ZodTypeProvider>();
  const errs = (...codes: ErrorCode[]) => errorResponses(...ADMIN_ERRORS, ...codes);

  // Upload routes get their own scope: only they parse multipart and text/plain, so a JSON route sent text/plain
  // answers 415 unsupported_media_type instead of failing validation.
  await app.register(async (uploads) => {
    await installUploadParsers(uploads, deps.uploadMaxBytes);
    uploads.withTypeProvider<ZodTypeProvider>().post('/admin/v1/products/:id/codes', {
      schema: {
        operationId: 'adminImportCodes',
        summary: 'Import codes into a product',
        description: 'Stock of codes: multipart field `file` (or a text/plain body), one code a line; duplicates are skipped.',
        params: productIdParams,
        response: {
          200: ok(importResult, 'Counts of imported, skipped (duplicates) and invalid lines, under data.'),
          ...errs('invalid_request', 'not_found', 'payload_too_large', 'unsupported_media_type'),
        },
      },
      handler: async (req) => ({
        ok: true as const,
        data: await deps.catalog.importCodes(req.params.id, await uploadedLines(req, deps.uploadMaxBytes)),
      }),
    });
    registerAdminFileUpload(uploads, deps, ADMIN_ERRORS);
  });

  r.get('/admin/v1/users', {
    schema: {
      operationId: 'adminListUsers',
      summary: 'List users',
      description: 'All users (keys hidden; `user show` reveals one).',
      response: { 200: ok(z.array(userView), 'Every user, keys hidden, under data.'), ...errs() },
    },
    handler: async () => ({ ok: true as const, data: await deps.users.list() }),
  });
  r.post('/admin/v1/users', {
    schema: {
      operationId: 'adminCreateUser',
      summary: 'Create a user',
      description: 'New user with API enabled and a fresh key.',
      body: userCreateBody,
      response: { 200: ok(userView, 'The new user with its API key, under data.'), ...errs('invalid_request', 'conflict') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.users.create(req.body, ACTOR) }),
  });
  r.get('/admin/v1/users/:ref', {
    schema: {
      operationId: 'adminShowUser',
      summary: 'Show a user',
      description: 'One user by id or name, with the current API key.',
      params: userRefParams,
      response: { 200: ok(userView, 'The user with its current API key, under data.'), ...errs('not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.users.show(req.params.ref) }),
  });
  r.post('/admin/v1/users/:ref/rotate-key', {
    schema: {
      operationId: 'adminRotateKey',
      summary: "Rotate a user's API key",
      description: 'New key; the old one fails on the very next request.',
      params: userRefParams,
      response: { 200: ok(userView, 'The user with its new API key, under data.'), ...errs('not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.users.rotateKey(req.params.ref) }),
  });
  r.post('/admin/v1/users/:ref/disable', {
    schema: {
      operationId: 'adminDisableUser',
      summary: "Disable a user's API access",
      description: 'API off: every request answers api_disabled.',
      params: userRefParams,
      response: { 200: ok(userView, 'The user, now disabled, under data.'), ...errs('not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.users.setEnabled(req.params.ref, false) }),
  });
  r.post('/admin/v1/users/:ref/enable', {
    schema: {
      operationId: 'adminEnableUser',
      summary: "Enable a user's API access",
      description: 'API on again.',
      params: userRefParams,
      response: { 200: ok(userView, 'The user, now enabled, under data.'), ...errs('not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.users.setEnabled(req.params.ref, true) }),
  });
  r.put('/admin/v1/users/:ref/ips', {
    schema: {
      operationId: 'adminSetUserIps',
      summary: "Replace a user's IP allowlist",
      description: 'Replace the IP allowlist (IPv4, IPv6, CIDR); empty = any address.',
      params: userRefParams,
      body: setIpsBody,
      response: { 200: ok(userView, 'The user with its new allowlist, under data.'), ...errs('not_found', 'invalid_request') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.users.setIps(req.params.ref, req.body.ips) }),
  });
  r.patch('/admin/v1/users/:ref', {
    schema: {
      operationId: 'adminUpdateUser',
      summary: "Change a user's order callbacks",
      description:
        'The callback URL of order callbacks ("" turns them off) and whether they may go to private addresses. A first callback URL makes the callback secret, shown in this answer only (callback_secret).',
      params: userRefParams,
      body: userCallbackBody,
      response: { 200: ok(userView, 'The changed user, under data.'), ...errs('not_found', 'invalid_request') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.users.updateCallback(req.params.ref, req.body) }),
  });
  r.post('/admin/v1/users/:ref/callback-secret', {
    schema: {
      operationId: 'adminRotateCallbackSecret',
      summary: "Rotate a user's callback secret",
      description: 'A new secret signs every order callback sent from now on, retries included; shown this once.',
      params: userRefParams,
      response: { 200: ok(callbackSecretView, 'The new callback secret, under data.'), ...errs('not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.users.rotateCallbackSecret(req.params.ref) }),
  });
  r.post('/admin/v1/users/:ref/credit', {
    schema: {
      operationId: 'adminCreditUser',
      summary: "Credit or debit a user's balance",
      description: 'Signed balance change with a ledger row; never below zero.',
      params: userRefParams,
      body: creditBody,
      response: {
        200: ok(creditResult, 'The movement, the new balance and the ledger row id, under data.'),
        ...errs('not_found', 'invalid_request'),
      },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.users.credit(req.params.ref, req.body.amount, req.body.note, ACTOR) }),
  });
  r.get('/admin/v1/users/:ref/ledger', {
    schema: {
      operationId: 'adminUserLedger',
      summary: "Read a user's ledger",
      description: 'Last 50 balance movements, newest first; of the test balance with ?test=true.',
      params: userRefParams,
      querystring: testListQuery,
      response: {
        200: ok(z.array(ledgerEntry), 'The last 50 balance movements, newest first, under data.'),
        ...errs('not_found', 'invalid_request'),
      },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.users.ledger(req.params.ref, 50, { test: req.query.test === true }) }),
  });

  r.get('/admin/v1/categories', {
    schema: {
      operationId: 'adminListCategories',
      summary: 'List categories',
      description: 'All categories.',
      response: { 200: ok(z.array(categorySchema), 'Every category, under data.'), ...errs() },
    },
    handler: async () => ({ ok: true as const, data: await deps.catalog.listCategories(true) }),
  });
  r.post('/admin/v1/categories', {
    schema: {
      operationId: 'adminCreateCategory',
      summary: 'Create a category',
      description: 'New local category.',
      body: categoryCreateBody,
      response: { 200: ok(categorySchema, 'The new category, under data.'), ...errs('invalid_request') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.catalog.createCategory(req.body) }),
  });
  r.get('/admin/v1/products', {
    schema: {
      operationId: 'adminListProducts',
      summary: 'List products',
      description: 'All local products, hidden ones included.',
      response: { 200: ok(z.array(adminProduct), 'Every local product, hidden ones included, under data.'), ...errs() },
    },
    handler: async () => ({ ok: true as const, data: await deps.catalog.listProductsAdmin() }),
  });
  r.post('/admin/v1/products', {
    schema: {
      operationId: 'adminCreateProduct',
      summary: 'Create a product',
      description: 'New local product; descriptions are sanitised to safe HTML.',
      body: productCreateBody,
      response: { 200: ok(adminProduct, 'The new product, under data.'), ...errs('invalid_request') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.catalog.createProduct(req.body) }),
  });
  r.patch('/admin/v1/products/:id', {
    schema: {
      operationId: 'adminUpdateProduct',
      summary: 'Update a product',
      description: 'Change a local product; cached lists drop it at once.',
      params: productIdParams,
      body: productUpdateBody,
      response: { 200: ok(adminProduct, 'The changed product, under data.'), ...errs('invalid_request', 'not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.catalog.updateProduct(req.params.id, req.body) }),
  });
  registerAdminOrderRoutes(app, deps, ADMIN_ERRORS);
  registerAdminSandboxRoutes(app, deps, ADMIN_ERRORS);
  registerAdminPayRoutes(app, deps, ADMIN_ERRORS);
  registerAdminWebhookRoutes(app, deps, ADMIN_ERRORS);
  registerAdminTransactionRoutes(app, deps, ADMIN_ERRORS);
  registerAdminSyncRoutes(app, deps, ADMIN_ERRORS);
  registerAdminAuditRoutes(app, deps, ADMIN_ERRORS);
  registerAdminBackupRoutes(app, deps, ADMIN_ERRORS);
  registerAdminDashboardRoutes(app, deps, ADMIN_ERRORS);

  r.get('/admin/v1/settings', {
    schema: {
      operationId: 'adminListSettings',
      summary: 'List settings',
      description: 'Every runtime setting; secret values masked.',
      response: { 200: ok(z.array(settingView), 'Every runtime setting, secret values masked, under data.'), ...errs() },
    },
    handler: async () => ({
      ok: true as const,
      data: (await deps.settings.list()).map(masked),
    }),
  });
  r.get('/admin/v1/settings/:key', {
    schema: {
      operationId: 'adminGetSetting',
      summary: 'Read a setting',
      description: 'One setting, unmasked.',
      params: settingKeyParams,
      response: { 200: ok(settingView, 'The setting, unmasked, under data.'), ...errs('not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.settings.view(req.params.key) }),
  });
  r.put('/admin/v1/settings/:key', {
    schema: {
      operationId: 'adminSetSetting',
      summary: 'Change a setting',
      description:
        'Change a setting (empty value = default); every process sees it within ~1 s. A secret setting is answered masked: it is never echoed.',
      params: settingKeyParams,
      body: settingSetBody,
      response: {
        200: ok(settingView, 'The setting with its new value (masked for a secret setting), under data.'),
        ...errs('not_found', 'invalid_request'),
      },
    },
    handler: async (req) => ({ ok: true as const, data: masked(await deps.settings.set(req.params.key, req.body.value)) }),
  });

  r.post('/admin/v1/demo/seed', {
    schema: {
      operationId: 'adminDemoSeed',
      summary: 'Seed demo data',
      description: 'Demo user, categories, products and codes, with curl commands to try.',
      response: {
        200: ok(demoSeedResult, 'The demo user with its API key, the categories, the products and curl commands to try, under data.'),
        ...errs(),
      },
    },
    handler: async (req) => {
      const base = (await deps.settings.get('public_base_url')) || `${req.protocol}://${req.host}`;
      return { ok: true as const, data: await seedDemo(deps, base, ACTOR) };
    },
  });
}
