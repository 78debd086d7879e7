import { describe, expect, it } from 'vitest';
import { createIpMatcher, normalizeIp, parseIpRule, validateIpList } from '../../src/shared/ip.js';

// Unit tests of the allowlist parser and matcher (src/shared/ip.ts): the ordering API's ip_not_allowed, the admin
// API's ADMIN_ALLOWED_IPS and `user set-ips` all rest on these three functions.

const BAD_ENTRIES = [
  '256.1.1.1',
  '1.2.3.4/33',
  '::/129',
  'abc',
  '1.2.3.4/8/1',
  '',
  '   ',
  '1.2.3',
  '1.2.3.4.5',
  '01.2.3.4',
  '1.2.3.4/',
  '/8',
  '1.2.3.4/x',
  '1.2.3.4/-1',
  '1.2.3.4/1000',
  '2001:db8:::1',
  '2001:db8::g',
  '[2001:db8::1]',
  '2001:db8::/129',
  '10.0.0.0/8 10.0.0.1',
];

describe('parseIpRule', () => {
  it.each(BAD_ENTRIES)('refuses %j', (entry) => {
    expect(parseIpRule(entry)).toBeNull();
  });

  it('parses IPv4 addresses and CIDRs (an address alone is a /32)', () => {
    expect(parseIpRule('1.2.3.4')).toEqual({ family: 'ipv4', address: '1.2.3.4', prefix: 32 });
    expect(parseIpRule('10.0.0.0/8')).toEqual({ family: 'ipv4', address: '10.0.0.0', prefix: 8 });
    expect(parseIpRule('0.0.0.0/0')).toEqual({ family: 'ipv4', address: '0.0.0.0', prefix: 0 });
    expect(parseIpRule('255.255.255.255/32')).toEqual({ family: 'ipv4', address: '255.255.255.255', prefix: 32 });
  });

  it('parses IPv6 addresses and CIDRs in compressed and full forms (an address alone is a /128)', () => {
    expect(parseIpRule('2001:db8::1')).toEqual({ family: 'ipv6', address: '2001:db8::1', prefix: 128 });
    expect(parseIpRule('2001:db8::/32')).toEqual({ family: 'ipv6', address: '2001:db8::', prefix: 32 });
    expect(parseIpRule('::1')).toMatchObject({ family: 'ipv6', prefix: 128 });
    expect(parseIpRule('::/0')).toMatchObject({ family: 'ipv6', prefix: 0 });
    expect(parseIpRule('2001:0db8:0000:0000:0000:0000:0000:0001')).toMatchObject({ family: 'ipv6', prefix: 128 });
    expect(parseIpRule('2001:db8::/128')).toMatchObject({ family: 'ipv6', prefix: 128 });
  });

  it('trims surrounding whitespace and reads an IPv4-mapped IPv6 address as IPv4', () => {
    expect(parseIpRule('  10.0.0.1  ')).toEqual({ family: 'ipv4', address: '10.0.0.1', prefix: 32 });
    expect(parseIpRule(' 10.0.0.0/8\t')).toEqual({ family: 'ipv4', address: '10.0.0.0', prefix: 8 });
    expect(parseIpRule('::ffff:10.1.2.3')).toEqual({ family: 'ipv4', address: '10.1.2.3', prefix: 32 });
    expect(parseIpRule('::FFFF:10.1.2.3')).toEqual({ family: 'ipv4', address: '10.1.2.3', prefix: 32 });
  });
});

describe('normalizeIp', () => {
  it('strips only the IPv4-mapped prefix', () => {
    expect(normalizeIp('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(normalizeIp('127.0.0.1')).toBe('127.0.0.1');
    expect(normalizeIp('::1')).toBe('::1');
    expect(normalizeIp('2001:db8::ffff:1.2.3.4')).toBe('2001:db8::ffff:1.2.3.4');
  });
});

describe('createIpMatcher', () => {
  it('an empty list allows every address (docs/tables.md, `users`: empty = any address)', () => {
    const m = createIpMatcher([]);
    expect(m.empty).toBe(true);
    for (const ip of ['127.0.0.1', '203.0.113.9', '::1', '2001:db8::5', '::ffff:10.0.0.1']) expect(m.allows(ip)).toBe(true);
  });

  it('IPv4 exact: only that address', () => {
    const m = createIpMatcher(['10.1.2.3']);
    expect(m.empty).toBe(false);
    expect(m.allows('10.1.2.3')).toBe(true);
    expect(m.allows('10.1.2.4')).toBe(false);
    expect(m.allows('10.1.2.2')).toBe(false);
  });

  it('IPv4 CIDR: inclusive bounds, nothing outside', () => {
    const m = createIpMatcher(['10.1.0.0/16']);
    expect(m.allows('10.1.0.0')).toBe(true);
    expect(m.allows('10.1.255.255')).toBe(true);
    expect(m.allows('10.1.77.3')).toBe(true);
    expect(m.allows('10.0.255.255')).toBe(false);
    expect(m.allows('10.2.0.0')).toBe(false);
  });

  it('IPv6 exact matches every spelling of the same address, case-insensitively', () => {
    const m = createIpMatcher(['2001:DB8::1']);
    expect(m.allows('2001:db8::1')).toBe(true);
    expect(m.allows('2001:0db8:0000:0000:0000:0000:0000:0001')).toBe(true);
    expect(m.allows('2001:db8:0:0::1')).toBe(true);
    expect(m.allows('2001:db8::2')).toBe(false);
  });

  it('IPv6 CIDR: inclusive bounds, nothing outside', () => {
    const m = createIpMatcher(['2001:db8:abcd::/48']);
    expect(m.allows('2001:db8:abcd::')).toBe(true);
    expect(m.allows('2001:db8:abcd:ffff:ffff:ffff:ffff:ffff')).toBe(true);
    expect(m.allows('2001:db8:abcc:ffff:ffff:ffff:ffff:ffff')).toBe(false);
    expect(m.allows('2001:db8:abce::')).toBe(false);
  });

  it('an IPv4-mapped IPv6 address (dual-stack socket) matches an IPv4 rule', () => {
    const exact = createIpMatcher(['10.1.2.3']);
    expect(exact.allows('::ffff:10.1.2.3')).toBe(true);
    expect(exact.allows('::ffff:10.1.2.4')).toBe(false);
    const cidr = createIpMatcher(['10.0.0.0/8']);
    expect(cidr.allows('::ffff:10.200.3.4')).toBe(true);
    expect(cidr.allows('::ffff:11.0.0.1')).toBe(false);
  });

  it('does not mix families: an IPv4 rule refuses IPv6 addresses and an IPv6 rule refuses IPv4 ones', () => {
    expect(createIpMatcher(['10.0.0.0/8']).allows('2001:db8::1')).toBe(false);
    expect(createIpMatcher(['2001:db8::/32']).allows('10.0.0.1')).toBe(false);
  });

  it('a non-empty list refuses what is not an address', () => {
    const m = createIpMatcher(['0.0.0.0/0']);
    expect(m.allows('10.0.0.1')).toBe(true);
    expect(m.allows('not-an-ip')).toBe(false);
    expect(m.allows('')).toBe(false);
  });

  it('several rules: an address is allowed when any rule matches', () => {
    const m = createIpMatcher(['10.1.2.3', '192.168.0.0/24', '2001:db8::/64']);
    expect(m.allows('10.1.2.3')).toBe(true);
    expect(m.allows('192.168.0.200')).toBe(true);
    expect(m.allows('2001:db8::42')).toBe(true);
    expect(m.allows('192.168.1.1')).toBe(false);
    expect(m.allows('2001:db8:0:1::1')).toBe(false);
  });

  it('fails closed: a list made only of unusable entries (e.g. written by SQL) allows nobody, it does not mean "any"', () => {
    // allowed_ips is documented for SQL edits (docs/tables.md); a typo there must not open the key to every address.
    const m = createIpMatcher(['10.0.0.0/33']);
    expect(m.allows('203.0.113.9')).toBe(false);
    expect(m.allows('10.0.0.1')).toBe(false);
  });
});

describe('validateIpList', () => {
  it('accepts an empty list (= any address)', () => {
    expect(validateIpList([])).toEqual({ ok: true, list: [] });
  });

  it('returns every bad entry, in order, and nothing else', () => {
    expect(validateIpList(['10.0.0.1', '256.1.1.1', '2001:db8::/32', 'abc', '1.2.3.4/33', '::/129', '1.2.3.4/8/1'])).toEqual({
      ok: false,
      bad: ['256.1.1.1', 'abc', '1.2.3.4/33', '::/129', '1.2.3.4/8/1'],
    });
  });

  it('canonicalises: trims, drops a full-length prefix, unwraps IPv4-mapped addresses and removes duplicates', () => {
    expect(
      validateIpList([' 10.0.0.1 ', '10.0.0.1/32', '::ffff:10.0.0.1', '10.0.0.0/8', '10.0.0.0/8', '2001:db8::1/128', '2001:db8::/32']),
    ).toEqual({
      ok: true,
      list: ['10.0.0.1', '10.0.0.0/8', '2001:db8::1', '2001:db8::/32'],
    });
  });

  it('canonicalises IPv6 to its compressed lower-case form, so spellings of one address collapse to one entry', () => {
    expect(validateIpList(['2001:0DB8:0000:0000:0000:0000:0000:0001', '2001:db8::1', '2001:DB8:0:0::1'])).toEqual({
      ok: true,
      list: ['2001:db8::1'],
    });
    expect(validateIpList(['2001:0DB8:ABCD:0000::/48'])).toEqual({ ok: true, list: ['2001:db8:abcd::/48'] });
  });

  it('what it accepts, the matcher enforces (validate and match agree)', () => {
    const r = validateIpList(['10.1.0.0/16', '2001:db8::/48']);
    expect(r.ok).toBe(true);
    const m = createIpMatcher(r.ok ? r.list : []);
    expect(m.allows('10.1.9.9')).toBe(true);
    expect(m.allows('10.2.0.1')).toBe(false);
    expect(m.allows('2001:db8:0:ffff::1')).toBe(true);
    expect(m.allows('2001:db9::1')).toBe(false);
  });
});
