import readline from 'node:readline';
import { PassThrough, type Readable } from 'node:stream';
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { CatalogService } from '../catalog/service.js';
import { bearerToken } from '../http/auth-util.js';
import { AppError, errorResponses, type ErrorCode } from '../http/errors.js';
import type { SettingsService } from '../settings/service.js';
import { safeEqual } from '../shared/crypto.js';
import { createIpMatcher } from '../shared/ip.js';
import { categorySchema } from '../ordering/schemas.js';
import type { UsersService } from '../users/service.js';
import { seedDemo } from './demo.js';
import { registerAdminPayRoutes, type AdminPayDeps } from './pay-routes.js';
import { registerAdminFileUpload, registerAdminOrderRoutes, type AdminOrderDeps } from './order-routes.js';
import { registerAdminSyncRoutes, type AdminSyncDeps } from './sync-routes.js';
import {
  adminProduct,
  categoryCreateBody,
  creditBody,
  creditResult,
  demoSeedResult,
  importResult,
  ledgerEntry,
  ok,
  productCreateBody,
  productIdParams,
  productUpdateBody,
  setIpsBody,
  settingKeyParams,
  settingSetBody,
  settingView,
  userCreateBody,
  userRefParams,
  userView,
} from './schemas.js';

export type AdminDeps = AdminOrderDeps & AdminPayDeps & AdminSyncDeps & {
  adminToken: string;
  allowedIps: string[];
  uploadMaxBytes: number;
  users: UsersService;
  catalog: CatalogService;
  settings: SettingsService;
};

const ADMIN_ERRORS: ErrorCode[] = ['admin_unauthorized', 'forbidden'];
const security: Record<string, string[]>[] = [{ adminToken: [] }];
const ACTOR = 'admin-api';

/** Passes a stream through, failing it with payload_too_large past `max` bytes (the body limit does not apply to streams). */
function limitBytes(input: Readable, max: number): Readable {
  let seen = 0;
  const out = new PassThrough();
  // The importer may refuse before reading (unknown product): an error then has no reader and must not crash us.
  out.on('error', () => {});
  input.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > max && !out.destroyed) {
      // Drain and drop the rest rather than destroying the request: the 413 answer still has a socket to go out on.
      input.unpipe(out);
      input.resume();
      out.destroy(new AppError('payload_too_large', `Upload is larger than ${max} bytes`));
    }
  });
  input.on('error', (err) => out.destroy(err));
  input.pipe(out);
  return out;
}

/** Lines of an upload; readline starts when iteration starts, since lines it emits before that would be lost. */
function linesOf(stream: Readable, maxBytes: number): AsyncIterable<string> {
  return {
    async *[Symbol.asyncIterator]() {
      // A stream that already failed (over the size limit while the transaction was opening) never ends by itself.
      if (stream.errored) throw stream.errored;
      let failure: Error | null = null;
      const rl = readline.createInterface({ input: stream, crlfDelay: Infinity });
      const onError = (err: Error) => {
        failure = err;
        rl.close();
      };
      stream.once('error', onError);
      try {
        for await (const line of rl) {
          if (failure) break;
          yield line;
        }
      } finally {
        stream.off('error', onError);
      }
      if (failure) throw failure;
      // @fastify/multipart ends an oversized file quietly and only flags it: refuse, so the import rolls back whole
      // instead of stocking a cut-off last code.
      if ((stream as Readable & { truncated?: boolean }).truncated) throw new AppError('payload_too_large', `Upload is larger than ${maxBytes} bytes`);
    },
  };
}

/** The admin HTTP API (DESIGN 6): loopback-only by default, Bearer ADMIN_TOKEN; the CLI is a thin client of it. */
export async function adminRoutes(app: FastifyInstance, deps: AdminDeps): Promise<void> {
  const allowed = createIpMatcher(deps.allowedIps);
  app.addHook('onRequest', async (req) => {
    if (!allowed.allows(req.ip)) throw new AppError('forbidden', `Admin API is not served to ${req.ip}; see ADMIN_ALLOWED_IPS`);
    const token = bearerToken(req.headers.authorization);
    if (!token || !safeEqual(token, deps.adminToken)) throw new AppError('admin_unauthorized', 'Send Authorization: Bearer <ADMIN_TOKEN>');
  });
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['admin'];
  const errs = (...codes: ErrorCode[]) => errorResponses(...ADMIN_ERRORS, ...codes);

  // Upload routes get their own scope: only they parse multipart and text/plain, so a JSON route sent text/plain
  // answers 415 unsupported_media_type instead of failing validation.
  await app.register(async (uploads) => {
    await uploads.register(multipart, { limits: { fileSize: deps.uploadMaxBytes, files: 1, fields: 10 } });
    // Code lists may also be sent as a plain text body (one code a line), streamed as well.
    uploads.addContentTypeParser('text/plain', (_req, payload, done) => done(null, limitBytes(payload, deps.uploadMaxBytes)));
    uploads.withTypeProvider<ZodTypeProvider>().post('/admin/v1/products/:id/codes', {
      schema: {
        operationId: 'adminImportCodes',
        tags,
        security,
        description: 'Stock of codes: multipart field `file` (or a text/plain body), one code a line; duplicates are skipped.',
        params: productIdParams,
        response: { 200: ok(importResult), ...errs('invalid_request', 'not_found', 'payload_too_large', 'unsupported_media_type') },
      },
      handler: async (req) => ({ ok: true as const, data: await deps.catalog.importCodes(req.params.id, await uploadedLines(req, deps.uploadMaxBytes)) }),
    });
    registerAdminFileUpload(uploads, deps, security, ADMIN_ERRORS);
  });

  r.get('/admin/v1/users', {
    schema: { operationId: 'adminListUsers', tags, security, description: 'All users (keys hidden; `user show` reveals one).', response: { 200: ok(z.array(userView)), ...errs() } },
    handler: async () => ({ ok: true as const, data: await deps.users.list() }),
  });
  r.post('/admin/v1/users', {
    schema: { operationId: 'adminCreateUser', tags, security, description: 'New user with API enabled and a fresh key.', body: userCreateBody, response: { 200: ok(userView), ...errs('invalid_request', 'conflict') } },
    handler: async (req) => ({ ok: true as const, data: await deps.users.create(req.body, ACTOR) }),
  });
  r.get('/admin/v1/users/:ref', {
    schema: { operationId: 'adminShowUser', tags, security, description: 'One user by id or name, with the current API key.', params: userRefParams, response: { 200: ok(userView), ...errs('not_found') } },
    handler: async (req) => ({ ok: true as const, data: await deps.users.show(req.params.ref) }),
  });
  r.post('/admin/v1/users/:ref/rotate-key', {
    schema: { operationId: 'adminRotateKey', tags, security, description: 'New key; the old one fails on the very next request.', params: userRefParams, response: { 200: ok(userView), ...errs('not_found') } },
    handler: async (req) => ({ ok: true as const, data: await deps.users.rotateKey(req.params.ref) }),
  });
  r.post('/admin/v1/users/:ref/disable', {
    schema: { operationId: 'adminDisableUser', tags, security, description: 'API off: every request answers api_disabled.', params: userRefParams, response: { 200: ok(userView), ...errs('not_found') } },
    handler: async (req) => ({ ok: true as const, data: await deps.users.setEnabled(req.params.ref, false) }),
  });
  r.post('/admin/v1/users/:ref/enable', {
    schema: { operationId: 'adminEnableUser', tags, security, description: 'API on again.', params: userRefParams, response: { 200: ok(userView), ...errs('not_found') } },
    handler: async (req) => ({ ok: true as const, data: await deps.users.setEnabled(req.params.ref, true) }),
  });
  r.put('/admin/v1/users/:ref/ips', {
    schema: { operationId: 'adminSetUserIps', tags, security, description: 'Replace the IP allowlist (IPv4, IPv6, CIDR); empty = any address.', params: userRefParams, body: setIpsBody, response: { 200: ok(userView), ...errs('not_found', 'invalid_request') } },
    handler: async (req) => ({ ok: true as const, data: await deps.users.setIps(req.params.ref, req.body.ips) }),
  });
  r.post('/admin/v1/users/:ref/credit', {
    schema: { operationId: 'adminCreditUser', tags, security, description: 'Signed balance change with a ledger row; never below zero.', params: userRefParams, body: creditBody, response: { 200: ok(creditResult), ...errs('not_found', 'invalid_request') } },
    handler: async (req) => ({ ok: true as const, data: await deps.users.credit(req.params.ref, req.body.amount, req.body.note, ACTOR) }),
  });
  r.get('/admin/v1/users/:ref/ledger', {
    schema: { operationId: 'adminUserLedger', tags, security, description: 'Last 50 balance movements, newest first.', params: userRefParams, response: { 200: ok(z.array(ledgerEntry)), ...errs('not_found') } },
    handler: async (req) => ({ ok: true as const, data: await deps.users.ledger(req.params.ref) }),
  });

  r.get('/admin/v1/categories', {
    schema: { operationId: 'adminListCategories', tags, security, description: 'All categories.', response: { 200: ok(z.array(categorySchema)), ...errs() } },
    handler: async () => ({ ok: true as const, data: await deps.catalog.listCategories(true) }),
  });
  r.post('/admin/v1/categories', {
    schema: { operationId: 'adminCreateCategory', tags, security, description: 'New local category.', body: categoryCreateBody, response: { 200: ok(categorySchema), ...errs('invalid_request') } },
    handler: async (req) => ({ ok: true as const, data: await deps.catalog.createCategory(req.body) }),
  });
  r.get('/admin/v1/products', {
    schema: { operationId: 'adminListProducts', tags, security, description: 'All local products, hidden ones included.', response: { 200: ok(z.array(adminProduct)), ...errs() } },
    handler: async () => ({ ok: true as const, data: await deps.catalog.listProductsAdmin() }),
  });
  r.post('/admin/v1/products', {
    schema: { operationId: 'adminCreateProduct', tags, security, description: 'New local product; descriptions are sanitised to safe HTML.', body: productCreateBody, response: { 200: ok(adminProduct), ...errs('invalid_request') } },
    handler: async (req) => ({ ok: true as const, data: await deps.catalog.createProduct(req.body) }),
  });
  r.patch('/admin/v1/products/:id', {
    schema: { operationId: 'adminUpdateProduct', tags, security, description: 'Change a local product; cached lists drop it at once.', params: productIdParams, body: productUpdateBody, response: { 200: ok(adminProduct), ...errs('invalid_request', 'not_found') } },
    handler: async (req) => ({ ok: true as const, data: await deps.catalog.updateProduct(req.params.id, req.body) }),
  });
  registerAdminOrderRoutes(app, deps, security, ADMIN_ERRORS);
  registerAdminPayRoutes(app, deps, security, ADMIN_ERRORS);
  registerAdminSyncRoutes(app, deps, security, ADMIN_ERRORS);

  r.get('/admin/v1/settings', {
    schema: { operationId: 'adminListSettings', tags, security, description: 'Every runtime setting; secret values masked.', response: { 200: ok(z.array(settingView)), ...errs() } },
    handler: async () => ({ ok: true as const, data: (await deps.settings.list()).map((s) => (s.secret && s.value ? { ...s, value: '********', default: s.default ? '********' : '' } : s)) }),
  });
  r.get('/admin/v1/settings/:key', {
    schema: { operationId: 'adminGetSetting', tags, security, description: 'One setting, unmasked.', params: settingKeyParams, response: { 200: ok(settingView), ...errs('not_found') } },
    handler: async (req) => ({ ok: true as const, data: await deps.settings.view(req.params.key) }),
  });
  r.put('/admin/v1/settings/:key', {
    schema: { operationId: 'adminSetSetting', tags, security, description: 'Change a setting (empty value = default); every process sees it within ~1 s.', params: settingKeyParams, body: settingSetBody, response: { 200: ok(settingView), ...errs('not_found', 'invalid_request') } },
    handler: async (req) => ({ ok: true as const, data: await deps.settings.set(req.params.key, req.body.value) }),
  });

  r.post('/admin/v1/demo/seed', {
    schema: { operationId: 'adminDemoSeed', tags, security, description: 'Demo user, categories, products and codes, with curl commands to try.', response: { 200: ok(demoSeedResult), ...errs() } },
    handler: async (req) => {
      const base = (await deps.settings.get('public_base_url')) || `${req.protocol}://${req.host}`;
      return { ok: true as const, data: await seedDemo(deps, base, ACTOR) };
    },
  });
}

async function uploadedLines(req: FastifyRequest, maxBytes: number): Promise<AsyncIterable<string>> {
  if (req.isMultipart()) {
    const file = await req.file();
    if (!file) throw new AppError('invalid_request', 'Send the code list as the multipart field `file`');
    return linesOf(file.file, maxBytes);
  }
  if (req.body && typeof (req.body as Readable).pipe === 'function') return linesOf(req.body as Readable, maxBytes);
  throw new AppError('unsupported_media_type', 'Send the code list as multipart/form-data (field `file`) or text/plain');
}
