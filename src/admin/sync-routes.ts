import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorResponses, type ErrorCode } from '../http/errors.js';
import { allowSilence, LONG_ACTION_MARGIN_SECONDS } from '../http/server-options.js';
import type { CronService } from '../jobs/cron.js';
import type { SettingsService } from '../settings/service.js';
import { moneyInput, moneyOutput } from '../shared/money.js';
import type { OverridesService } from '../sync/overrides.js';
import type { SyncService } from '../sync/service.js';
import { ok, productIdParams } from './schemas.js';

export type AdminSyncDeps = { cron: CronService; sync: SyncService; sourceOverrides: OverridesService; settings: SettingsService };

/** Reason -> number of source records (docs/operations.md, "A source site's catalogue sync that fails or leaves records out"). */
const reasons = z.record(z.string(), z.number().int());
const syncOutcome = z.object({
  ran: z.boolean(),
  reason: z.string().optional(),
  mode: z.enum(['full', 'delta']).optional(),
  categories: z.number().int().optional(),
  products: z.number().int().optional(),
  created: z.number().int().optional(),
  updated: z.number().int().optional(),
  missing: z.number().int().optional(),
  skipped: z.number().int().optional(),
  skipped_reasons: reasons.optional(),
  cleaned_reasons: reasons.optional(),
});
const syncRun = z.object({
  id: z.number().int(),
  mode: z.string(),
  started_at: z.string(),
  finished_at: z.string().nullable(),
  ok: z.boolean().nullable(),
  categories: z.number().int(),
  products: z.number().int(),
  created: z.number().int(),
  updated: z.number().int(),
  missing: z.number().int(),
  skipped: z.number().int(),
  skipped_reasons: reasons.describe('records left out, by reason; skipped is their total'),
  cleaned_reasons: reasons.describe('records kept after their text was cleaned, by reason'),
  error: z.string().nullable(),
  error_code: z
    .string()
    .nullable()
    .describe('why a failed run stopped: too_many_pages, too_many_products, run_timeout, answer_too_large, timeout, ...'),
});
export const overrideBody = z.object({
  // null sits on the number branch: OpenAPI 3.0 allows `nullable` only beside a `type` (redocly nullable-type-sibling).
  price_adjust: z
    .union([z.number().nullable(), z.string()])
    .pipe(moneyInput.nullable())
    .optional()
    .describe('added to the marked-up source price; negative lowers it; null removes'),
  fixed_price: z
    .union([z.number().nullable(), z.string()])
    .pipe(moneyInput.nullable())
    .optional()
    .describe('replaces the computed price; null removes'),
  name: z.string().max(200).nullable().optional(),
  description: z.string().max(20_000).nullable().optional(),
  description2: z.string().max(20_000).nullable().optional(),
  hidden: z.boolean().nullable().optional().describe('true hides, false shows, null follows the source'),
});
export const categoryOverrideBody = z.object({
  name: z.string().max(200).nullable().optional(),
  hidden: z.boolean().nullable().optional(),
  // null sits on the number branch: OpenAPI 3.0 allows `nullable` only beside a `type` (redocly nullable-type-sibling).
  markup_percent: z
    .union([z.number().nullable(), z.string()])
    .transform((v) => (v === null ? null : String(v)))
    .optional()
    .describe('percentage >= 0 with at most 2 decimals, instead of price_markup_percent; null removes'),
});
const overrideView = z.object({
  product_id: z.string().nullable(),
  source_id: z.string(),
  price_adjust: moneyOutput.nullable(),
  fixed_price: moneyOutput.nullable(),
  name: z.string().nullable(),
  description: z.string().nullable(),
  description2: z.string().nullable(),
  hidden: z.boolean().nullable(),
  updated_at: z.string(),
});
const categoryOverrideView = z.object({
  category_id: z.string().nullable(),
  source_id: z.string(),
  name: z.string().nullable(),
  hidden: z.boolean().nullable(),
  markup_percent: z.number().nullable().describe("this category's markup instead of price_markup_percent; null follows the setting"),
  updated_at: z.string(),
});

/** Admin verbs of intermediary mode: sync now, sync history, overrides of source products and categories. */
export function registerAdminSyncRoutes(app: FastifyInstance, deps: AdminSyncDeps, baseErrors: ErrorCode[]): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const errs = (...codes: ErrorCode[]) => errorResponses(...baseErrors, ...codes);

  r.post('/admin/v1/sync/run', {
    schema: {
      operationId: 'adminSyncRun',
      summary: 'Run the catalogue sync now',
      description:
        'force=true ignores sync_interval_seconds; full=true ignores the delta watermark (the whole source catalogue is read and what it no longer lists is marked missing). A failed run answers 502 sync_failed and changed nothing; a run already in progress answers ran=false.',
      body: z
        .object({
          force: z.boolean().default(false),
          full: z.boolean().default(false).describe('read the whole source catalogue, as every sync_full_every-th run does'),
        })
        .default({ force: false, full: false }),
      response: { 200: ok(syncOutcome, 'What the run did (ran, reason, counts), under data.'), ...errs('sync_failed') },
    },
    handler: async (req) => {
      // The answer comes when the run ends, which may be long after IDLE_TIMEOUT_MS of silence on this connection.
      allowSilence(req.raw, ((await deps.settings.get('sync_run_timeout_seconds')) + LONG_ACTION_MARGIN_SECONDS) * 1000);
      return { ok: true as const, data: await deps.cron.syncNow(req.body.force, req.body.full) };
    },
  });
  r.get('/admin/v1/sync/status', {
    schema: {
      operationId: 'adminSyncStatus',
      summary: 'Last catalogue sync runs',
      description: 'The 10 most recent runs, newest first, with counts and errors.',
      response: { 200: ok(z.array(syncRun), 'The most recent sync runs, under data.'), ...errs() },
    },
    handler: async () => ({ ok: true as const, data: await deps.sync.status() }),
  });

  r.get('/admin/v1/overrides', {
    schema: {
      operationId: 'adminListOverrides',
      summary: 'Overrides of source products and categories',
      description: 'Every override, by public id and source id.',
      response: {
        200: ok(z.object({ products: z.array(overrideView), categories: z.array(categoryOverrideView) }), 'Every override, under data.'),
        ...errs(),
      },
    },
    handler: async () => ({ ok: true as const, data: await deps.sourceOverrides.list() }),
  });
  r.put('/admin/v1/overrides/:id', {
    schema: {
      operationId: 'adminSetOverride',
      summary: 'Override a source product',
      description: 'id = the product id our public API shows. Only the fields given change; a sync never touches overrides.',
      params: productIdParams,
      body: overrideBody,
      response: { 200: ok(overrideView, 'The override as stored, under data.'), ...errs('invalid_request', 'not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.sourceOverrides.set(req.params.id, req.body) }),
  });
  r.post('/admin/v1/overrides/:id/clear', {
    schema: {
      operationId: 'adminClearOverride',
      summary: 'Remove the overrides of a source product',
      description: 'The product shows the source values (after markup) again.',
      params: productIdParams,
      response: {
        200: ok(
          z.object({ product_id: z.string(), source_id: z.string(), cleared: z.boolean() }),
          'Whether an override was removed, under data.',
        ),
        ...errs('invalid_request', 'not_found'),
      },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.sourceOverrides.clear(req.params.id) }),
  });
  r.put('/admin/v1/category-overrides/:id', {
    schema: {
      operationId: 'adminSetCategoryOverride',
      summary: 'Rename, hide or mark up a source category',
      description:
        "id = the category id our public API shows; hiding a category hides its products; markup_percent replaces price_markup_percent for its products (a product's own override still wins).",
      params: productIdParams,
      body: categoryOverrideBody,
      response: { 200: ok(categoryOverrideView, 'The category override as stored, under data.'), ...errs('invalid_request', 'not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.sourceOverrides.setCategory(req.params.id, req.body) }),
  });
}
