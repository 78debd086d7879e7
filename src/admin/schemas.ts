import { z } from 'zod';
import { productSchema, categorySchema } from '../catalog/schemas.js';
import { moneyInput, moneyOutput } from '../shared/money.js';

export const userView = z.object({
  id: z.number().int(),
  name: z.string(),
  api_key: z.string().optional().describe('the current key (admin only)'),
  api_key_hint: z.string(),
  api_enabled: z.boolean(),
  balance: moneyOutput,
  allowed_ips: z.array(z.string()),
  callback_url: z.string().nullable().describe('where order callbacks go; null: none are sent'),
  allow_private_targets: z.boolean().describe('order callbacks may go to loopback/private addresses'),
  callback_secret: z.string().optional().describe('only in the answer that made the first callback secret: shown once'),
  test_api_key: z.string().optional().describe('the current sandbox key (admin only), once `user test-key` made one'),
  test_api_key_hint: z.string().optional().describe('once the user has a sandbox key'),
  test_balance: moneyOutput.optional().describe('what test orders debit (docs/sandbox-ordering.md), once the user has a sandbox key'),
  created_at: z.string(),
  updated_at: z.string(),
});

export const userCallbackBody = z.object({
  callback_url: z
    .string()
    .max(2000)
    .optional()
    .meta({ description: 'an http(s) URL for order callbacks; "" turns them off', example: 'https://reseller.example.com/callbacks' }),
  allow_private_targets: z.boolean().optional().describe('let callbacks reach loopback/private addresses (local setups and tests)'),
});
export const callbackSecretView = z.object({
  id: z.number().int(),
  callback_url: z.string().nullable(),
  callback_secret: z.string().describe('the new secret: shown this once'),
});

export const ipsInput = z
  .array(z.string().max(64).describe('an IPv4 or IPv6 address, or a CIDR range such as 203.0.113.0/24; another text: 400 invalid_request'))
  .max(200)
  .meta({ example: ['203.0.113.7', '198.51.100.0/24'] });

export const userCreateBody = z.object({
  name: z.string().trim().min(1).max(100),
  balance: moneyInput.optional(),
  ips: ipsInput.optional(),
});

export const userRefParams = z.object({ ref: z.string().min(1).max(100).describe('user id or name') });
export const setIpsBody = z.object({ ips: ipsInput.describe('empty list = any address') });
export const creditBody = z.object({ amount: moneyInput.describe('negative debits'), note: z.string().max(500).optional() });
export const creditResult = z.object({ user_id: z.number().int(), amount: moneyOutput, balance: moneyOutput, ledger_id: z.number().int() });
export const ledgerEntry = z.object({
  id: z.number().int(),
  amount: moneyOutput,
  balance_after: moneyOutput,
  kind: z.string(),
  ref: z.string().nullable(),
  note: z.string().nullable(),
  actor: z.string(),
  test: z.literal(true).optional().describe('a movement of the test balance (only with ?test=true)'),
  created_at: z.string(),
});
export const testKeyView = z.object({
  id: z.number().int(),
  test_api_key: z.string().describe('the new sandbox key (rgk_test_...); the previous one stops at once'),
  test_balance: moneyOutput,
});
export const testBalanceBody = z.object({ amount: moneyInput.describe('the new test balance, 0 or more') });
export const testBalanceResult = z.object({ user_id: z.number().int(), test_balance: moneyOutput, ledger_id: z.number().int() });
export const testListQuery = z.object({
  test: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional()
    .describe('true: the test world (sandbox) instead of the live one'),
});

/** The sort columns are PostgreSQL `integer`: a larger number would fail in the database instead of here. */
const sortInput = z.number().int().min(-2_147_483_648).max(2_147_483_647);

export const categoryCreateBody = z.object({
  name: z.string().trim().min(1).max(200),
  parent_id: z
    .string()
    .regex(/^\d{1,9}$/)
    .optional(),
  sort: sortInput.optional(),
});

const qty = z.number().int().min(1).max(1_000_000);
export const productCreateBody = z.object({
  category_id: z.string().regex(/^\d{1,9}$/, 'must be a category id'),
  name: z.string().trim().min(1).max(200),
  price: moneyInput,
  type: z.enum(['code', 'file', 'service']).optional(),
  min_qty: qty.optional(),
  max_qty: qty.optional(),
  description: z.string().max(20_000).optional(),
  description2: z.string().max(20_000).optional(),
  hidden: z.boolean().optional(),
  sort: sortInput.optional(),
});
export const productUpdateBody = productCreateBody.omit({ type: true }).partial();
export const productIdParams = z.object({ id: z.string().min(1).max(32) });
export const adminProduct = productSchema.extend({
  hidden: z.boolean().describe('hidden from the public by any rule'),
  source: z.enum(['local', 'api']),
});
export const importResult = z.object({
  product_id: z.string(),
  imported: z.number().int(),
  skipped: z.number().int(),
  invalid: z.number().int(),
});

export const settingView = z.object({
  key: z.string(),
  value: z.string().describe('masked as "********" for a secret setting, except by GET /admin/v1/settings/:key'),
  default: z.string(),
  source: z.enum(['default', 'database']),
  secret: z.boolean(),
  help: z.string(),
});
export const settingKeyParams = z.object({ key: z.string().min(1).max(64) });
export const settingSetBody = z.object({
  value: z.string().max(4096).meta({ description: 'empty string resets to the default', example: '50' }),
});

export const demoSeedResult = z.object({
  user: userView,
  categories: z.array(categorySchema),
  products: z.array(adminProduct),
  codes_imported: z.number().int(),
  try: z.array(z.string()).describe('curl commands to try'),
});

/** The admin success envelope; the description becomes the answer's description in the OpenAPI document. */
export const ok = <T extends z.ZodType>(data: T, description: string) => z.object({ ok: z.literal(true), data }).describe(description);
