import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { forbiddenKind, resolveTarget, TargetRefusedError, type Resolver } from '../../src/webhooks/target.js';
import { createTestApp, offlineResolver, type TestApp } from '../harness.js';
import { makeMethod } from '../payments/helpers.js';
import { approve, attemptsOf, cron, makeHookClient, outboxOf, pendingPayment, startReceiver, until } from './kit.js';

/** What a refused event's last error adds to the reason: it ends the event until an admin acts. */
const NOT_RETRIED = 'not retried: fix the client (pay client update --webhook-url or --allow-private-targets) and resend the event';

describe('forbiddenKind', () => {
  it('names loopback, private, link-local, CGNAT and cloud metadata addresses; public ones pass', () => {
    const cases: [string, string | null][] = [
      ['127.0.0.1', 'loopback'],
      ['::1', 'loopback'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['10.1.2.3', 'private'],
      ['172.20.0.1', 'private'],
      ['192.168.1.1', 'private'],
      ['fd12::1', 'private'],
      ['169.254.10.1', 'link-local'],
      ['fe80::1', 'link-local'],
      ['100.64.0.1', 'CGNAT'],
      ['169.254.169.254', 'cloud metadata'],
      ['100.100.100.200', 'cloud metadata'],
      ['fd00:ec2::254', 'cloud metadata'],
      ['0.0.0.0', 'unspecified'],
      ['::ffff:7f00:1', 'loopback'],
      ['93.184.216.34', null],
      ['2606:4700::1111', null],
    ];
    for (const [ip, kind] of cases) expect([ip, forbiddenKind(ip)]).toEqual([ip, kind]);
  });

  it('IPv6 forms that reach an IPv4 address are judged by the address they embed', () => {
    const cases: [string, string | null][] = [
      ['::7f00:1', 'IPv4-compatible'],
      ['::127.0.0.1', 'IPv4-compatible'],
      ['::5db8:d822', 'IPv4-compatible'],
      ['64:ff9b::7f00:1', 'loopback (NAT64)'],
      ['64:ff9b::10.0.0.1', 'private (NAT64)'],
      ['64:ff9b::a9fe:a9fe', 'cloud metadata (NAT64)'],
      ['64:ff9b::5db8:d822', null],
      ['64:ff9b:1::5db8:d822', 'private (local-use NAT64)'],
      ['2002:7f00:1::1', 'loopback (6to4)'],
      ['2002:c0a8:101::1', 'private (6to4)'],
      ['2002:5db8:d822::1', null],
    ];
    for (const [ip, kind] of cases) expect([ip, forbiddenKind(ip)]).toEqual([ip, kind]);
  });

  it('documentation, site-local and IPv4-translated ranges are refused; IPv4-mapped is judged by the IPv4 address it maps', () => {
    const cases: [string, string | null][] = [
      ['192.0.2.1', 'documentation'],
      ['198.51.100.200', 'documentation'],
      ['203.0.113.7', 'documentation'],
      ['192.0.3.1', null],
      ['198.51.101.1', null],
      ['203.0.112.255', null],
      ['fec0::1', 'site-local'],
      ['feff:ffff::1', 'site-local'],
      ['::ffff:0:7f00:1', 'IPv4-translated'],
      ['::ffff:0:808:808', 'IPv4-translated'],
      ['::ffff:0:8.8.8.8', 'IPv4-translated'],
      ['::ffff:808:808', null],
      ['::ffff:8.8.8.8', null],
      ['::ffff:c000:201', 'documentation'],
      ['::ffff:203.0.113.9', 'documentation'],
      ['::ffff:a00:1', 'private'],
      ['64:ff9b::198.51.100.1', 'documentation (NAT64)'],
      ['2002:cb00:7101::1', 'documentation (6to4)'],
    ];
    for (const [ip, kind] of cases) expect([ip, forbiddenKind(ip)]).toEqual([ip, kind]);
  });

  it('a URL or a name that reaches one of those ranges is refused; an IPv4-mapped public address passes', async () => {
    const resolver: Resolver = async (h) => [
      {
        address: h === 'doc.shop.test' ? '203.0.113.9' : h === 'siit.shop.test' ? '::ffff:0:5db8:d822' : 'fec0::9',
        family: h === 'doc.shop.test' ? 4 : 6,
      },
    ];
    for (const host of [
      'doc.shop.test',
      'siit.shop.test',
      'site.shop.test',
      new URL('http://[::ffff:0:127.0.0.1]/').hostname,
      new URL('http://[fec0::1]/').hostname,
      new URL('http://192.0.2.33/').hostname,
    ]) {
      const refused = await resolveTarget(host, resolver, false).then(
        () => null,
        (e: Error) => e,
      );
      expect([host, refused instanceof TargetRefusedError]).toEqual([host, true]);
    }
    expect(await resolveTarget(new URL('http://[::ffff:93.184.216.34]/').hostname, resolver, false)).toBe('::ffff:5db8:d822');
  });

  it('every spelling of a loopback or unspecified host in a webhook URL is refused, localhost by name', async () => {
    // What a system resolver answers for localhost; the name is refused before it is asked.
    const calls: string[] = [];
    const resolver: Resolver = async (h) => (calls.push(h), [{ address: '127.0.0.1', family: 4 }]);
    const urls = [
      'http://2130706433/',
      'http://0177.0.0.1/',
      'http://0x7f.1/',
      'http://127.1/',
      'http://0/',
      'http://0.0.0.0/',
      'http://[::1]/',
      'http://[0:0:0:0:0:0:0:1]/',
      'http://[::]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:7f00:1]/',
      'http://[::127.0.0.1]/',
      'http://[64:ff9b::127.0.0.1]/',
      'http://localhost/',
      'http://LOCALHOST./',
      'http://api.localhost/',
    ];
    for (const u of urls) {
      const refused = await resolveTarget(new URL(u).hostname, resolver, false).then(
        () => null,
        (e: Error) => e,
      );
      expect([u, refused instanceof TargetRefusedError]).toEqual([u, true]);
    }
    expect(calls).toEqual([]);
    // With allow_private_targets the same names pass (local set-ups).
    expect(await resolveTarget('localhost', resolver, true)).toBe('127.0.0.1');
  });
});

describe('webhook target safety', () => {
  let t: TestApp;
  let resolverCalls: string[] = [];
  // Names under shop.test resolve here only: a rebinding name answers a public address the first time, then loopback.
  const answers = new Map<string, string[]>();
  const resolver: Resolver = async (hostname) => {
    resolverCalls.push(hostname);
    const list = answers.get(hostname);
    if (!list || list.length === 0) return offlineResolver(hostname);
    const address = list.length > 1 ? list.shift()! : list[0]!;
    return [{ address, family: address.includes(':') ? 6 : 4 }];
  };
  const receivers: { close(): Promise<void> }[] = [];
  beforeAll(async () => {
    t = await createTestApp({ webhookResolver: resolver });
    await makeMethod(t, 'TGT');
  });
  afterEach(async () => {
    while (receivers.length > 0) await receivers.pop()!.close();
    resolverCalls = [];
  });
  afterAll(async () => {
    await t?.close();
  });
  const receiver = async () => {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  };
  const firstAttempt = async (clientId: number) => {
    await until(async () => {
      const [row] = await outboxOf(t, clientId);
      return row !== undefined && (await attemptsOf(t, row.event_id)).length === 1;
    }, 'first attempt');
    const [row] = await outboxOf(t, clientId);
    return { row: row!, attempt: (await attemptsOf(t, row!.event_id))[0]! };
  };

  it('a loopback address is refused without allow_private_targets, with a clear reason, and nothing is sent', async () => {
    const r = await receiver();
    const c = await makeHookClient(t, r.url, { allowPrivate: false });
    await approve(t, (await pendingPayment(t, c)).payment_id);
    const { row, attempt } = await firstAttempt(c.id);
    const reason = `refused target: localhost is a loopback name; this client does not allow private targets; ${NOT_RETRIED}`;
    expect(row).toMatchObject({ status: 'dead', last_error: reason });
    expect(attempt).toMatchObject({ attempt: 1, status_code: null, error: reason, response: null });
    expect(r.received).toHaveLength(0);
  });

  it('a name that resolves to a private address is refused; with allow_private_targets the same name is delivered to', async () => {
    const r = await receiver();
    answers.set('hooks.private.shop.test', ['10.0.0.7']);
    const url = `http://hooks.private.shop.test:${r.port}/hook`;
    const c = await makeHookClient(t, url, { allowPrivate: false, domain: 'private.shop.test' });
    await approve(t, (await pendingPayment(t, c)).payment_id);
    const { attempt } = await firstAttempt(c.id);
    expect(attempt.error).toBe(
      `refused target: hooks.private.shop.test is 10.0.0.7 (private); this client does not allow private targets; ${NOT_RETRIED}`,
    );
    expect(r.received).toHaveLength(0);

    answers.set('hooks.local.shop.test', ['127.0.0.1']);
    const allowed = await makeHookClient(t, `http://hooks.local.shop.test:${r.port}/hook`, {
      allowPrivate: true,
      domain: 'local.shop.test',
    });
    await approve(t, (await pendingPayment(t, allowed)).payment_id);
    await until(async () => (await outboxOf(t, allowed.id))[0]?.status === 'delivered', 'delivery by name');
    expect(r.received).toHaveLength(1);
    expect(r.received[0]!.headers.host).toBe(`hooks.local.shop.test:${r.port}`);
  });

  it('a rebinding name (public when checked, loopback when connecting) is refused at connect time; no traffic leaves 127.0.0.1', async () => {
    const r = await receiver();
    answers.set('hooks.rebind.shop.test', ['93.184.216.34', '127.0.0.1']);
    const c = await makeHookClient(t, `http://hooks.rebind.shop.test:${r.port}/hook`, { allowPrivate: false, domain: 'rebind.shop.test' });
    await approve(t, (await pendingPayment(t, c)).payment_id);
    const { row, attempt } = await firstAttempt(c.id);
    expect(attempt.error).toBe(
      `refused target: hooks.rebind.shop.test is 127.0.0.1 (loopback); this client does not allow private targets; ${NOT_RETRIED}`,
    );
    expect(row.status).toBe('dead');
    // Resolved twice: once by the early check (public), once by the connection itself (loopback), which refused.
    expect(resolverCalls.filter((h) => h === 'hooks.rebind.shop.test')).toHaveLength(2);
    expect(r.received).toHaveLength(0);
  });

  it('a name that answers a public address to the early check and a documentation or site-local one when connecting is refused at connect time', async () => {
    const r = await receiver();
    for (const [label, late, kind] of [
      ['doc', '198.51.100.7', 'documentation'],
      ['site', 'fec0::7', 'site-local'],
      ['siit', '::ffff:0:7f00:1', 'IPv4-translated'],
    ] as const) {
      const host = `hooks.${label}.rebind.shop.test`;
      answers.set(host, ['93.184.216.34', late]);
      const c = await makeHookClient(t, `http://${host}:${r.port}/hook`, { allowPrivate: false, domain: `${label}.rebind.shop.test` });
      await approve(t, (await pendingPayment(t, c)).payment_id);
      const { attempt } = await firstAttempt(c.id);
      expect(attempt.error).toBe(
        `refused target: ${host} is ${late} (${kind}); this client does not allow private targets; ${NOT_RETRIED}`,
      );
      expect(resolverCalls.filter((h) => h === host)).toHaveLength(2);
    }
    expect(r.received).toHaveLength(0);
  });

  it('a decimal IPv4 literal for loopback in the webhook URL (a client from before IP domains were refused) is refused like 127.0.0.1', async () => {
    const r = await receiver();
    const c = await makeHookClient(t, `http://hooks.legacy.shop.test:${r.port}/hook`, { allowPrivate: false, domain: 'legacy.shop.test' });
    await t.deps.db.execute(
      sql`UPDATE pay_clients SET domain = '127.0.0.1', webhook_url = ${`http://2130706433:${r.port}/hook`} WHERE id = ${c.id}`,
    );
    await approve(t, (await pendingPayment(t, c)).payment_id);
    const { attempt } = await firstAttempt(c.id);
    expect(attempt.error).toBe(
      `refused target: 127.0.0.1 is 127.0.0.1 (loopback); this client does not allow private targets; ${NOT_RETRIED}`,
    );
    expect(r.received).toHaveLength(0);
  });

  it('a webhook URL no longer on the project domain at delivery time is refused', async () => {
    const r = await receiver();
    const c = await makeHookClient(t, r.url);
    const p = await pendingPayment(t, c);
    await t.deps.db.execute(sql`UPDATE pay_clients SET domain = 'elsewhere.shop.test' WHERE id = ${c.id}`);
    await approve(t, p.payment_id);
    const { attempt } = await firstAttempt(c.id);
    expect(attempt.error).toBe(`webhook_url is not on the client's domain elsewhere.shop.test; refused; ${NOT_RETRIED}`);
    expect(r.received).toHaveLength(0);
  });

  it('a refused target is logged once and ends its event (dead, never retried); once the admin allows private targets, a resend delivers it with the same event_id', async () => {
    const r = await receiver();
    answers.set('hooks.fix.shop.test', ['127.0.0.1']);
    const c = await makeHookClient(t, `http://hooks.fix.shop.test:${r.port}/hook`, { allowPrivate: false, domain: 'fix.shop.test' });
    await approve(t, (await pendingPayment(t, c)).payment_id);
    const { row } = await firstAttempt(c.id);
    const reason = 'refused target: hooks.fix.shop.test is 127.0.0.1 (loopback); this client does not allow private targets';
    expect(row).toEqual({ event_id: row.event_id, status: 'dead', attempts: 1, last_error: `${reason}; ${NOT_RETRIED}` });
    const logged = () =>
      t.logs
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter(
          (l) =>
            l.event_id === row.event_id && l.msg === 'webhook target refused; event dead until an admin fixes the client and resends it',
        );
    expect(logged()).toEqual([expect.objectContaining({ level: 40, event_id: row.event_id, client_id: c.id, reason })]);

    // The whole retry schedule (about 4.4 days) passes: nothing is attempted or logged again.
    for (let day = 0; day < 5; day++) {
      t.clock.advance(86_400_000);
      expect((await cron(t)).jobs.webhooks).toMatchObject({ attempted: 0 });
    }
    expect(await outboxOf(t, c.id)).toEqual([row]);
    expect(await attemptsOf(t, row.event_id)).toHaveLength(1);
    expect(logged()).toHaveLength(1);
    expect(r.received).toHaveLength(0);

    await t.adminData('PATCH', `/admin/v1/pay/clients/${c.id}`, { allow_private_targets: true });
    const resent = await t.adminData<{ event_id: string; status: string; last_error: string | null }>(
      'POST',
      `/admin/v1/pay/webhooks/${row.event_id}/resend`,
    );
    expect(resent).toMatchObject({ event_id: row.event_id, status: 'delivered', last_error: null });
    expect(r.received).toHaveLength(1);
    expect(r.received[0]!.headers['x-webhook-id']).toBe(row.event_id);
    expect((JSON.parse(r.received[0]!.body) as { event_id: string }).event_id).toBe(row.event_id);
    expect(logged()).toHaveLength(1);
  });
});
