import { B, cmd, type Command, enc, get, S } from './kit.js';

/** The `pay webhook` commands, in help order. */
export const payWebhookCommands: readonly Command[] = [
  cmd({
    noun: 'pay webhook',
    verb: 'list',
    usage: '[--status pending|delivered|dead] [--kind payment|order] [--test]',
    summary: 'the newest events of the outbox (payment webhooks and order callbacks); --test: the sandbox ones instead',
    options: { status: S, kind: S, test: B },
    call: (_, o) => {
      const q = (['status', 'kind'] as const).flatMap((k) => (o[k] === undefined ? [] : [`${k}=${enc(String(o[k]))}`]));
      if (o.test) q.push('test=true');
      return get(`/admin/v1/pay/webhooks${q.length > 0 ? `?${q.join('&')}` : ''}`);
    },
  }),
  cmd({
    noun: 'pay webhook',
    verb: 'show',
    usage: 'EVENT_ID',
    summary: 'one event with its body and every attempt',
    args: ['EVENT_ID'],
    call: ({ EVENT_ID }) => get(`/admin/v1/pay/webhooks/${enc(EVENT_ID)}`),
  }),
  cmd({
    noun: 'pay webhook',
    verb: 'resend',
    usage: 'EVENT_ID',
    summary: 'send a delivered or dead event again now (same event_id), with a fresh retry schedule',
    args: ['EVENT_ID'],
    call: ({ EVENT_ID }) => ({ method: 'POST', path: `/admin/v1/pay/webhooks/${enc(EVENT_ID)}/resend`, timeoutMs: 60_000 }),
  }),
];
