import { settingDefs } from '../settings/registry.js';

/** What an audited handler sees of its request: already validated by the route's zod schemas. */
type Req = { params: Record<string, string>; query: Record<string, unknown>; body: Record<string, unknown> | undefined };

export type AuditSpec = {
  /** Stable dotted name, the `action` column (docs/tables.md). */
  action: string;
  target?: (r: Req) => string | null;
  /** An allowlist of the request's fields: a summary never holds a key, token, secret, code value or password. */
  summary?: (r: Req) => Record<string, unknown>;
  /** No database transaction of its own (Redis): the row follows success, or the handler writes it (writeAuditRowNow). */
  deferred?: boolean;
  /** Adds to the summary from the answer's `data` when no transaction carried the row (counts known only at the end). */
  after?: (data: Record<string, unknown>) => Record<string, unknown>;
};

/** The fields of `o` named in `keys` that are present: summaries are built from allowlists only. */
function pick(o: Record<string, unknown> | undefined, keys: readonly string[]): Record<string, unknown> {
  if (!o) return {};
  return Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
}

const product = (r: Req) => `product:${r.params.id}`;
// Users are named by id from inside the change (src/users/service.ts), since the route's ref may be a name.
const payClient = (r: Req) => `pay_client:${r.params.id}`;
const payment = (r: Req) => `payment:${r.params.payment_id}`;
const fieldsOf = (r: Req) => ({ fields: Object.keys(r.body ?? {}).sort() });
const PRODUCT_FIELDS = ['category_id', 'name', 'type', 'price', 'min_qty', 'max_qty', 'hidden', 'sort'] as const;
const METHOD_FIELDS = [
  'code',
  'name',
  'bank_bin',
  'bank_code',
  'bank_name',
  'account_number',
  'account_name',
  'activate',
  'active',
  'make_default',
] as const;

/**
 * Every mutating admin operation, by operationId. A route missing here is still recorded (action = its operationId),
 * but test/foundation/audit-walk.test.ts fails until it has an entry with a considered summary.
 */
export const AUDIT_ACTIONS: Record<string, AuditSpec> = {
  adminCreateUser: { action: 'user.create', summary: (r) => pick(r.body, ['name', 'balance', 'ips']) },
  adminRotateKey: { action: 'user.rotate_key' },
  adminDisableUser: { action: 'user.disable' },
  adminEnableUser: { action: 'user.enable' },
  adminSetUserIps: { action: 'user.set_ips', summary: (r) => pick(r.body, ['ips']) },
  adminCreditUser: { action: 'user.credit', summary: (r) => pick(r.body, ['amount', 'note']) },
  adminUpdateUser: { action: 'user.update', summary: (r) => pick(r.body, ['callback_url', 'allow_private_targets']) },
  adminRotateCallbackSecret: { action: 'user.callback_secret' },
  adminRotateTestKey: { action: 'user.test_key' },
  adminSetTestBalance: { action: 'user.test_balance', summary: (r) => pick(r.body, ['amount']) },
  adminCreateCategory: { action: 'category.create', summary: (r) => pick(r.body, ['name', 'parent_id', 'sort']) },
  adminCreateProduct: { action: 'product.create', summary: (r) => pick(r.body, PRODUCT_FIELDS) },
  adminUpdateProduct: { action: 'product.update', target: product, summary: (r) => ({ ...fieldsOf(r), ...pick(r.body, PRODUCT_FIELDS) }) },
  adminImportCodes: { action: 'codes.import', target: product },
  adminAttachFile: { action: 'file.attach', target: product },
  adminMarkCodesUsed: {
    action: 'codes.mark_used',
    summary: (r) => ({ codes: (r.body?.codes as unknown[] | undefined)?.length ?? 0, used: r.body?.used }),
  },
  adminRefundOrder: { action: 'order.refund', target: (r) => `order:${r.params.code}` },
  // A read, audited through its route's config.audit: who took a copy of the database, and whether with the secrets.
  // Its handler writes the row before the archive goes out (src/admin/backup-routes.ts).
  adminBackup: { action: 'backup.create', deferred: true, summary: (r) => ({ with_secrets: r.query.with_secrets === 'true' }) },
  adminClearGuards: { action: 'guard.clear', deferred: true, after: (d) => pick(d, ['cleared']) },
  adminSetSetting: {
    action: 'setting.set',
    target: (r) => `setting:${r.params.key}`,
    summary: (r) => {
      const key = r.params.key!;
      const secret = (settingDefs as Record<string, { secret?: boolean }>)[key]?.secret === true;
      const value = r.body?.value;
      return { key, value: secret && value !== '' ? '[secret]' : value };
    },
  },
  adminDemoSeed: { action: 'demo.seed', target: () => 'demo' },
  // The merge's transaction carries the row (with its counts, src/sync/write.ts); a run that did not run gets it after.
  adminSyncRun: {
    action: 'sync.run',
    summary: (r) => pick(r.body, ['force']),
    after: (d) => pick(d, ['ran', 'reason', 'mode', 'created', 'updated', 'missing', 'skipped']),
  },
  adminSetOverride: {
    action: 'override.set',
    target: product,
    summary: (r) => ({ ...fieldsOf(r), ...pick(r.body, ['price_adjust', 'fixed_price', 'name', 'hidden']) }),
  },
  adminClearOverride: { action: 'override.clear', target: product },
  adminSetCategoryOverride: {
    action: 'category_override.set',
    target: (r) => `category:${r.params.id}`,
    summary: (r) => pick(r.body, ['name', 'hidden']),
  },
  adminPayClientRequest: { action: 'pay_client.request', summary: (r) => pick(r.body, ['name', 'domain', 'webhook_url', 'ips']) },
  adminPayClientApprove: {
    action: 'pay_client.approve',
    target: payClient,
    summary: (r) => pick(r.body, ['ips', 'allow_private_targets']),
  },
  adminPayClientSetIps: { action: 'pay_client.set_ips', target: payClient, summary: (r) => pick(r.body, ['ips']) },
  adminPayClientUpdate: {
    action: 'pay_client.update',
    target: payClient,
    summary: (r) => pick(r.body, ['webhook_url', 'allow_private_targets', 'events']),
  },
  adminPayClientDisable: { action: 'pay_client.disable', target: payClient },
  adminPayClientEnable: { action: 'pay_client.enable', target: payClient },
  adminPayClientTestCredentials: { action: 'pay_client.test_credentials', target: payClient },
  adminPayClientRotateSecret: { action: 'pay_client.rotate_secret', target: payClient, summary: (r) => pick(r.body, ['grace_seconds']) },
  adminPayMethodCreate: {
    action: 'pay_method.create',
    target: (r) => `pay_method:${String(r.body?.code)}`,
    summary: (r) => pick(r.body, METHOD_FIELDS),
  },
  adminPayMethodUpdate: {
    action: 'pay_method.update',
    target: (r) => `pay_method:${r.params.code}`,
    summary: (r) => pick(r.body, METHOD_FIELDS),
  },
  adminPaymentApprove: { action: 'payment.approve', target: payment },
  adminPaymentReject: { action: 'payment.reject', target: payment },
  adminPaymentReport: { action: 'payment.report', target: payment },
  adminPaymentCancel: { action: 'payment.cancel', target: payment },
  adminWebhookResend: { action: 'webhook.resend', target: (r) => `webhook_event:${r.params.event_id}` },
};
