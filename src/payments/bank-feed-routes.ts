import { createHmac } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DEFAULT_VOCABULARY, installErrorVocabulary } from '../http/error-handler.js';
import { API_DOCS, documentRoutes } from '../http/openapi.js';
import { AppError, errorResponses } from '../http/errors.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import { safeEqual } from '../shared/crypto.js';
import { moneyInput } from '../shared/money.js';
import { FEED_RESULTS, type BankFeedsService, type FeedResult } from './bank-feeds.js';

/** Casso's signature timestamp must be this close to our clock (docs/payments.md, section 7.1). */
const CASSO_TOLERANCE_MS = 300_000;

/**
 * Above this a JSON number may not be the amount the bank sent: a literal of 16 or more significant digits does not
 * survive JSON parsing into a double (9007199254740993 reads as ...992). Such amounts are accepted as strings only.
 */
const EXACT_JSON_NUMBER_LIMIT = 1e13;
const feedAmount = z
  .union([
    z
      .number()
      .refine((n) => Math.abs(n) < EXACT_JSON_NUMBER_LIMIT, 'an amount this large is not exact as a JSON number; send it as a string'),
    z.string(),
  ])
  .pipe(moneyInput);

const txId = z.union([z.number().int().nonnegative(), z.string().trim().min(1).max(64)]).transform(String);
const text = (max: number) => z.string().max(max).nullish();

const sepayBody = z.looseObject({
  id: txId,
  gateway: text(100),
  transactionDate: text(64),
  accountNumber: text(64),
  code: text(255),
  content: text(2000),
  transferType: z.enum(['in', 'out']),
  transferAmount: feedAmount.refine((s) => !s.startsWith('-'), 'must not be negative'),
  accumulated: z.number().nullish(),
  subAccount: text(64),
  referenceCode: text(255),
  description: text(2000),
});

const cassoBody = z.looseObject({
  error: z.number().int().nullish(),
  data: z.looseObject({
    id: txId,
    reference: text(255),
    description: text(2000),
    amount: feedAmount.describe('negative for an outgoing transfer'),
    runningBalance: z.number().nullish(),
    transactionDateTime: text(64),
    accountNumber: text(64),
    bankName: text(100),
  }),
});

const feedResponse = z
  .object({
    ok: z.literal(true),
    success: z.literal(true),
    result: z
      .enum(FEED_RESULTS as [FeedResult, ...FeedResult[]])
      .describe(
        'what became of the notification: approved (its request is approved), duplicate (already stored; nothing changed), unmatched (no request, another account, or no account number while bank_feed_require_account is on), amount_mismatch, late (the request is already final), ignored (an outgoing transfer), ambiguous (two open requests match; neither is approved)',
      ),
  })
  .describe('The notification was accepted and stored; result says what became of it.');

/** JSON with object keys sorted at every depth: what Casso signs. */
function sortKeysDeep(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeysDeep);
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v as Record<string, unknown>)
        .sort()
        .map((k) => [k, sortKeysDeep((v as Record<string, unknown>)[k])]),
    );
  }
  return v;
}

/** X-Casso-Signature value for `body` at `t` (Unix ms): HMAC-SHA512 over t "." JSON of the key-sorted body. */
function cassoSignature(key: string, t: number | string, body: unknown): string {
  return createHmac('sha512', key)
    .update(`${t}.${JSON.stringify(sortKeysDeep(body))}`, 'utf8')
    .digest('hex');
}

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) ?? '';
const unauthorized = (message: string) => new AppError('unauthorized', message);

/**
 * Incoming-transfer notifications from the shop's bank-feed services (docs/payments.md, section 7.1). Their own plugin: neither the
 * ordering API key nor the payment API headers apply; each feed has its own credential, checked before validation.
 */
export async function bankFeedRoutes(
  app: FastifyInstance,
  deps: { settings: SettingsService; clock: Clock; bankFeeds: BankFeedsService },
): Promise<void> {
  installErrorVocabulary(app, DEFAULT_VOCABULARY);
  documentRoutes(app, API_DOCS.bankFeeds, ['unauthorized']);
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['bank feeds'];

  async function checkSepay(req: FastifyRequest): Promise<void> {
    const key = await deps.settings.get('sepay_api_key');
    if (!key) throw unauthorized('The SePay feed is off (setting sepay_api_key is empty)');
    const m = /^Apikey\s+(\S+)\s*$/i.exec(one(req.headers.authorization));
    if (!m || !safeEqual(m[1]!, key)) throw unauthorized('Wrong or missing SePay credential; send Authorization: Apikey <sepay_api_key>');
  }

  async function checkCasso(req: FastifyRequest): Promise<void> {
    const key = await deps.settings.get('casso_checksum_key');
    if (!key) throw unauthorized('The Casso feed is off (setting casso_checksum_key is empty)');
    const m = /^\s*t=(\d{1,16})\s*,\s*v1=([0-9a-fA-F]{1,256})\s*$/.exec(one(req.headers['x-casso-signature']));
    if (!m) throw unauthorized('Missing or malformed X-Casso-Signature; expected t=<Unix ms>,v1=<hex>');
    if (Math.abs(deps.clock.now().getTime() - Number(m[1])) > CASSO_TOLERANCE_MS)
      throw unauthorized('X-Casso-Signature timestamp is more than 300 s away from server time');
    if (!safeEqual(m[2]!.toLowerCase(), cassoSignature(key, m[1]!, req.body ?? null)))
      throw unauthorized('X-Casso-Signature does not match the body');
  }

  r.post('/api/v1/bank-feeds/sepay', {
    schema: {
      operationId: 'bankFeedSepay',
      tags,
      summary: 'SePay transaction webhook',
      security: [{ sepayApiKey: [] }],
      description:
        "SePay's webhook format, authenticated by Authorization: Apikey <sepay_api_key> (empty setting = feed off, 401). Every accepted notification is stored once per transaction id; an exact match (transfer content, amount, account) approves its payment request.",
      body: sepayBody,
      response: { 200: feedResponse, ...errorResponses('unauthorized', 'invalid_request') },
    },
    preValidation: (req) => checkSepay(req),
    handler: async (req) => {
      const b = req.body;
      const result: FeedResult = await deps.bankFeeds.record({
        feed: 'sepay',
        transactionId: b.id,
        reference: b.referenceCode ?? null,
        amount: b.transferAmount,
        direction: b.transferType,
        content: b.content ?? '',
        texts: [b.code ?? '', b.content ?? '', b.description ?? ''],
        accountNumber: b.accountNumber || null,
        transactionDate: b.transactionDate ?? null,
        rawBody: req.rawBody ?? '',
      });
      return { ok: true as const, success: true as const, result };
    },
  });

  r.post('/api/v1/bank-feeds/casso', {
    schema: {
      operationId: 'bankFeedCasso',
      tags,
      summary: 'Casso webhook v2',
      security: [{ cassoSignature: [] }],
      description:
        "Casso's webhook v2 format, authenticated by X-Casso-Signature: t=<Unix ms>,v1=<hex HMAC-SHA512 keyed with casso_checksum_key over t + '.' + the key-sorted JSON body>, t within 300 s (empty setting = feed off, 401). A negative amount is an outgoing transfer (ignored).",
      body: cassoBody,
      response: { 200: feedResponse, ...errorResponses('unauthorized', 'invalid_request') },
    },
    preValidation: (req) => checkCasso(req),
    handler: async (req) => {
      const d = req.body.data;
      const out = d.amount.startsWith('-');
      const result: FeedResult = await deps.bankFeeds.record({
        feed: 'casso',
        transactionId: d.id,
        reference: d.reference ?? null,
        amount: out ? d.amount.slice(1) : d.amount,
        direction: out ? 'out' : 'in',
        content: d.description ?? '',
        texts: [d.description ?? ''],
        accountNumber: d.accountNumber || null,
        transactionDate: d.transactionDateTime ?? null,
        rawBody: req.rawBody ?? '',
      });
      return { ok: true as const, success: true as const, result };
    },
  });
}
