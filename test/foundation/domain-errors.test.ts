import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError, fieldError } from '../../src/http/errors.js';
import {
  DEFAULT_VOCABULARY,
  domainErrorAnswer,
  installErrorVocabulary,
  PAYMENT_VOCABULARY,
  translateWith,
  type ErrorVocabulary,
} from '../../src/http/error-handler.js';
import { PaymentFnRefused } from '../../src/payments/create-fn.js';
import { IdempotencyRefused, InvoicePending, PaymentMethodUnavailable, PaymentStateError } from '../../src/payments/errors.js';
import { translatePaymentError } from '../../src/payments/routes.js';
import { DomainError } from '../../src/shared/domain-error.js';
import { allowlistOf } from '../../src/shared/ip.js';
import { ADMIN_TOKEN, bearer, createTestApp, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { expectError, query } from '../helpers/assert.js';

// Services refuse in domain terms; each API family's scope answers them in its own codes (docs/decisions.md, "Domain
// errors"). An answer is the whole of an AppError: code, status, message, details and headers.
const answerOf = (err: DomainError, vocab: ErrorVocabulary) => {
  const a = domainErrorAnswer(err, vocab);
  return { code: a.code, status: a.status, message: a.message, options: a.options };
};

/**
 * Every error class in src/: a refusal of a service extends DomainError (directly or through a subclass), so every API
 * scope can answer it; the others are technical and say here why. A new class that extends Error fails until it takes
 * one side.
 */
const TECHNICAL_ERRORS: Record<string, string> = {
  AppError: 'the HTTP answer itself, built only at the API edge',
  CliError: "the CLI's own outcome (its exit status and envelope code): the CLI is an edge, not a service",
  ConfigError: 'the process refuses to start on a bad environment; nothing answers it',
  AppSecretMismatchError: 'the process refuses to start with another APP_SECRET than its data was sealed with',
  DataDirLockedError: 'the process refuses to start on a data folder another process holds',
  PortRefusedError: 'the process cannot listen; nothing answers it',
  InexactJsonNumber: 'a programming guard: a value JSON.stringify would write inexactly',
  LaneWaitEnded: "a concurrency primitive's signal; the ordering service refuses it as LaneFull (busy)",
  FactsTimeout: 'the database did not answer in time; /readyz answers not_ready',
  SourceError: "an outside party's failure and how sure we are of it; the sync and ordering services decide what it means",
  CodeDeliveredTwice: 'rolls one transaction back inside the sync service; never leaves it',
  AnswerTooLarge: "a byte bound on an outside party's answer, raised while it streams",
  TargetRefusedError: "the webhook address guard, raised in undici's connect; recorded as a failed delivery attempt",
};

function errorClasses(dir: string): Map<string, { base: string; file: string }> {
  const out = new Map<string, { base: string; file: string }>();
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = path.join(entry.parentPath, entry.name);
    for (const m of fs.readFileSync(file, 'utf8').matchAll(/\bclass\s+(\w+)\s+extends\s+(\w+)/g)) out.set(m[1]!, { base: m[2]!, file });
  }
  return out;
}

describe('every error class in src/ is a DomainError or a technical error with a reason', () => {
  const classes = errorClasses('src');
  const rootOf = (name: string): string => {
    const seen = new Set<string>();
    for (let n = name; ; n = classes.get(n)!.base) {
      if (n === 'DomainError' || !classes.has(n) || seen.has(n)) return n;
      seen.add(n);
    }
  };

  it('finds the error classes it is about', () => {
    expect(rootOf('PaymentStateError')).toBe('DomainError');
    expect(rootOf('OrderRefused')).toBe('DomainError');
    expect(rootOf('SourceError')).toBe('Error');
  });

  it('each class whose chain reaches Error passes through DomainError, or is technical for a stated reason', () => {
    const plain = [...classes.keys()].filter((name) => name !== 'DomainError' && rootOf(name) === 'Error');
    // A subclass of a technical error (RunTimeout extends SourceError) is technical for its parent's reason.
    const unexplained = plain.filter((name) => !(name in TECHNICAL_ERRORS) && !(classes.get(name)!.base in TECHNICAL_ERRORS));
    expect(unexplained.map((name) => `${classes.get(name)!.file}: ${name}`)).toEqual([]);
    // A technical error that became a DomainError (or went away) leaves the list too.
    expect(Object.keys(TECHNICAL_ERRORS).filter((name) => !plain.includes(name))).toEqual([]);
  });

  it('the payment refusals are DomainErrors with the kind their answers had', () => {
    expect(new PaymentStateError('not_found', 'x')).toMatchObject({ kind: 'not_found', name: 'PaymentStateError' });
    expect(new PaymentStateError('refused', 'x')).toMatchObject({ kind: 'conflict', name: 'PaymentStateError' });
    expect(new PaymentFnRefused('in_progress', undefined)).toBeInstanceOf(DomainError);
  });
});

describe('domainErrorAnswer: each kind in the default (ordering, admin, cron, ops) and the payment vocabulary', () => {
  const cases: { err: DomainError; default: ReturnType<typeof answerOf>; payment: ReturnType<typeof answerOf> }[] = [
    {
      err: new DomainError('not_found', 'No product "7"'),
      default: { code: 'not_found', status: 404, message: 'No product "7"', options: {} },
      payment: { code: 'PAYMENT_NOT_FOUND', status: 404, message: 'No product "7"', options: {} },
    },
    {
      err: new DomainError('conflict', 'A backup is already running'),
      default: { code: 'conflict', status: 409, message: 'A backup is already running', options: {} },
      payment: { code: 'conflict', status: 409, message: 'A backup is already running', options: {} },
    },
    {
      err: new DomainError('invalid', 'Give 1 to 10000 codes'),
      default: { code: 'invalid_request', status: 400, message: 'Give 1 to 10000 codes', options: {} },
      payment: { code: 'VALIDATION_ERROR', status: 400, message: 'Give 1 to 10000 codes', options: {} },
    },
    {
      err: new DomainError('invalid', 'amount is too large', { path: 'body.amount' }),
      default: {
        code: 'invalid_request',
        status: 400,
        message: 'amount is too large',
        options: { details: [{ path: 'body.amount', message: 'amount is too large' }] },
      },
      payment: {
        code: 'VALIDATION_ERROR',
        status: 400,
        message: 'amount is too large',
        options: { details: [{ path: 'body.amount', message: 'amount is too large' }] },
      },
    },
    {
      // Fields with messages of their own win over `path`.
      err: new DomainError('invalid', 'No category 9', { path: 'ignored', fields: [{ path: 'category_id', message: 'unknown category' }] }),
      default: {
        code: 'invalid_request',
        status: 400,
        message: 'No category 9',
        options: { details: [{ path: 'category_id', message: 'unknown category' }] },
      },
      payment: {
        code: 'VALIDATION_ERROR',
        status: 400,
        message: 'No category 9',
        options: { details: [{ path: 'category_id', message: 'unknown category' }] },
      },
    },
    {
      err: new DomainError('busy', 'Too many orders waiting', { retryAfterSeconds: 7 }),
      default: { code: 'unavailable', status: 503, message: 'Too many orders waiting', options: { headers: { 'Retry-After': '7' } } },
      payment: { code: 'unavailable', status: 503, message: 'Too many orders waiting', options: { headers: { 'Retry-After': '7' } } },
    },
    {
      err: new DomainError('upstream_failed', 'Sync failed, nothing was changed: timeout'),
      default: { code: 'sync_failed', status: 502, message: 'Sync failed, nothing was changed: timeout', options: {} },
      payment: { code: 'sync_failed', status: 502, message: 'Sync failed, nothing was changed: timeout', options: {} },
    },
    {
      err: new DomainError('too_large', 'File is larger than 10 bytes'),
      default: { code: 'payload_too_large', status: 413, message: 'File is larger than 10 bytes', options: {} },
      payment: { code: 'payload_too_large', status: 413, message: 'File is larger than 10 bytes', options: {} },
    },
    {
      err: new DomainError('unauthenticated', 'Unknown API key'),
      default: { code: 'unauthorized', status: 401, message: 'Unknown API key', options: {} },
      payment: { code: 'API_KEY_INVALID', status: 401, message: 'Unknown API key', options: {} },
    },
  ];

  it.each(cases.map((c) => [`${c.err.kind}${c.err.info.fields ? ' with fields' : c.err.info.path ? ' with path' : ''}`, c] as const))(
    '%s',
    (_name, c) => {
      expect(answerOf(c.err, DEFAULT_VOCABULARY)).toEqual(c.default);
      expect(answerOf(c.err, PAYMENT_VOCABULARY)).toEqual(c.payment);
    },
  );

  it('busy without a retry time still says when to retry', () => {
    expect(domainErrorAnswer(new DomainError('busy', 'x'), DEFAULT_VOCABULARY).options.headers).toEqual({ 'Retry-After': '1' });
  });

  it('a subclass keeps its kind and its name', () => {
    class LaneFull extends DomainError {
      constructor() {
        super('busy', 'The lane is full', { retryAfterSeconds: 2 });
      }
    }
    const err = new LaneFull();
    expect(err).toBeInstanceOf(DomainError);
    expect(err.name).toBe('LaneFull');
    expect(domainErrorAnswer(err, DEFAULT_VOCABULARY).status).toBe(503);
  });
});

describe('translateWith: the translators of a scope, first answer wins', () => {
  class A extends DomainError {}
  class B extends DomainError {}
  const fromA = (err: Error) => (err instanceof A ? new AppError('forbidden', 'a') : err);
  const fromB = (err: Error) => (err instanceof B ? new AppError('not_ready', 'b') : err);
  const fromAny = (err: Error) => (err instanceof DomainError ? new AppError('conflict', 'any') : err);

  it('tries each in order and leaves an error none knows unchanged', () => {
    const t = translateWith(fromA, fromB, fromAny);
    expect((t(new A('conflict', 'x')) as AppError).code).toBe('forbidden');
    expect((t(new B('conflict', 'x')) as AppError).code).toBe('not_ready');
    expect((t(new DomainError('conflict', 'x')) as AppError).message).toBe('any');
    const plain = new Error('plain');
    expect(t(plain)).toBe(plain);
    expect(translateWith()(plain)).toBe(plain);
  });
});

describe('the payment services refuse in domain terms; each scope answers what the services built as AppError before', () => {
  // What a scope's error handler does with a refusal: its translate first, then the plain kind.
  const answered = (err: Error, vocab: ErrorVocabulary) => {
    const out = vocab.translate ? vocab.translate(err) : err;
    const a = out instanceof DomainError ? domainErrorAnswer(out, vocab) : (out as AppError);
    return { code: a.code, status: a.status, message: a.message, options: a.options };
  };
  const payment = { ...PAYMENT_VOCABULARY, translate: translatePaymentError };
  const admin = DEFAULT_VOCABULARY;
  const was = (a: AppError) => ({ code: a.code, status: a.status, message: a.message, options: a.options });
  const cases: { name: string; err: Error; vocab: ErrorVocabulary; before: AppError }[] = [
    {
      name: 'create: a bad amount',
      err: new DomainError('invalid', 'amount must be at least 10000', { path: 'body.amount' }),
      vocab: payment,
      before: fieldError('VALIDATION_ERROR', 'body.amount', 'amount must be at least 10000'),
    },
    {
      name: 'create: a key reused with another body',
      err: new IdempotencyRefused('reused', 'This Idempotency-Key was used with a different request body'),
      vocab: payment,
      before: new AppError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request body'),
    },
    {
      name: 'create: a key still in progress',
      err: new IdempotencyRefused('in_progress', 'still running'),
      vocab: payment,
      before: new AppError('IDEMPOTENCY_IN_PROGRESS', 'still running'),
    },
    {
      name: 'create: no active method',
      err: new PaymentMethodUnavailable('No default payment method is active'),
      vocab: payment,
      before: new AppError('PAYMENT_METHOD_INVALID', 'No default payment method is active'),
    },
    {
      name: 'create: an open request for the invoice',
      err: new InvoicePending('pay_x', 'merchant_invoice_id already has an open payment request pay_x'),
      vocab: payment,
      before: new AppError('PAYMENT_INVOICE_PENDING', 'merchant_invoice_id already has an open payment request pay_x', {
        extra: { payment_id: 'pay_x' },
      }),
    },
    {
      name: 'status, cancel: an unknown payment',
      err: new PaymentStateError('not_found', 'No such payment request for this client'),
      vocab: payment,
      before: new AppError('PAYMENT_NOT_FOUND', 'No such payment request for this client'),
    },
    {
      name: 'a transition the state forbids',
      err: new PaymentStateError('refused', 'Payment pay_x is paid; it cannot become cancelled'),
      vocab: payment,
      before: new AppError('VALIDATION_ERROR', 'Payment pay_x is paid; it cannot become cancelled'),
    },
    {
      name: 'admin: an unknown payment',
      err: new PaymentStateError('not_found', 'No payment request "pay_x"'),
      vocab: admin,
      before: new AppError('not_found', 'No payment request "pay_x"'),
    },
    {
      name: 'admin: a transition the state forbids',
      err: new PaymentStateError('refused', 'Payment pay_x is paid; it cannot become cancelled'),
      vocab: admin,
      before: new AppError('conflict', 'Payment pay_x is paid; it cannot become cancelled'),
    },
    {
      name: 'clients, methods: a bad field',
      err: new DomainError('invalid', 'name must be 1-100 characters', { path: 'name' }),
      vocab: admin,
      before: fieldError('invalid_request', 'name', 'name must be 1-100 characters'),
    },
    {
      name: 'clients: bad allowlist entries, one detail each',
      err: (() => {
        try {
          return allowlistOf(['1.2.3.4/33', 'x']);
        } catch (err) {
          return err as Error;
        }
      })() as Error,
      vocab: admin,
      before: new AppError('invalid_request', 'Not an IPv4/IPv6 address or CIDR: 1.2.3.4/33, x', {
        details: [
          { path: 'ips', message: '"1.2.3.4/33" is not an address or CIDR' },
          { path: 'ips', message: '"x" is not an address or CIDR' },
        ],
      }),
    },
    {
      name: 'clients, methods: an unknown one',
      err: new DomainError('not_found', 'No API client 9'),
      vocab: admin,
      before: new AppError('not_found', 'No API client 9'),
    },
    {
      name: 'clients, methods: a state that forbids the change',
      err: new DomainError('conflict', 'API client 9 is not approved yet'),
      vocab: admin,
      before: new AppError('conflict', 'API client 9 is not approved yet'),
    },
  ];
  it.each(cases)('$name', (c) => {
    expect(answered(c.err, c.vocab)).toEqual(was(c.before));
  });
});

describe("a service's domain error, answered in the envelope of the scope that called it", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('the settings service refuses an unknown key in domain terms; admin answers 404 not_found, a payment scope PAYMENT_NOT_FOUND', async () => {
    const message = 'Unknown setting "no_such_key"; see `setting list`';
    const thrown = await t.deps.settings.view('no_such_key').catch((err: unknown) => err);
    expect(thrown).toBeInstanceOf(DomainError);
    expect(thrown).not.toBeInstanceOf(AppError);
    expect((thrown as DomainError).kind).toBe('not_found');

    const admin = await t.admin('GET', '/admin/v1/settings/no_such_key');
    expectError(admin, 404, 'not_found');
    expect(admin.json()).toEqual({ ok: false, error: 'not_found', message });

    // The same refusal met inside a scope of the payment vocabulary takes that family's code.
    const pay = Fastify();
    try {
      await pay.register(async (scope) => {
        installErrorVocabulary(scope, PAYMENT_VOCABULARY);
        scope.get('/probe', async () => t.deps.settings.view('no_such_key'));
      });
      const res = await pay.inject({ method: 'GET', url: '/probe' });
      expectError(res, 404, 'PAYMENT_NOT_FOUND');
      expect(res.json()).toEqual({ ok: false, error: 'PAYMENT_NOT_FOUND', message });
    } finally {
      await pay.close();
    }
  });

  it('an invalid value names its field in details, and nothing is stored', async () => {
    const res = await t.admin('PUT', '/admin/v1/settings/price_markup_percent', { value: 'lots' });
    expectError(res, 400, 'invalid_request', { details: [{ path: 'price_markup_percent', message: expect.any(String) }] });
    // The field's message is the parser's reason; the whole message also names the setting.
    const { message, details } = res.json() as { message: string; details: { message: string }[] };
    expect(message).toBe(`Invalid value for price_markup_percent: ${details[0]!.message}`);
    expect((await t.adminData<{ source: string }>('GET', '/admin/v1/settings/price_markup_percent')).source).toBe('default');
  });

  it('a balance read of a user removed behind a cached key is unauthenticated: the ordering API answers 401 unauthorized', async () => {
    const user = await makeUser(t);
    const get = () => t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key) });
    expect((await get()).statusCode).toBe(200);
    // SQL, not the admin API: no cache drop, so the key still authenticates from memory and the read finds no row.
    await t.deps.db.execute(sql`DELETE FROM users WHERE id = ${user.id}`);
    const res = await get();
    expectError(res, 401, 'unauthorized');
    expect(res.json()).toEqual({ ok: false, error: 'unauthorized', message: 'Unknown API key' });
  });
});

describe('a stored file past FILE_MAX_BYTES: the storage refuses too_large, the admin upload scope answers 413', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await createTestApp({ env: { FILE_MAX_BYTES: '1024' } });
    base = await t.listen();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers payload_too_large with the limit, and leaves neither a row nor a file', async () => {
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, type: 'file', price: 10 });
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(5000)]), 'big.bin');
    const res = await fetch(`${base}/admin/v1/products/${p.id}/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: form,
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ ok: false, error: 'payload_too_large', message: 'File is larger than 1024 bytes' });
    expect(await query(t, sql`SELECT id FROM product_files WHERE product_id = ${Number(p.id)}`)).toEqual([]);
    expect(fs.readdirSync(path.join(t.deps.config.dataDir, 'files'))).toEqual([]);
  });
});
