import { cmd, type Command, enc, get, S } from './kit.js';

/** The `pay webhook` commands, in help order. */
export const payWebhookCommands: readonly Command[] = [
  cmd({
    noun: 'pay webhook',
    verb: 'list',
    usage: '[--status pending|delivered|dead]',
    summary: 'the newest webhook events of the outbox',
    options: { status: S },
    call: (_, o) => get(`/admin/v1/pay/webhooks${o.status === undefined ? '' : `?status=${enc(String(o.status))}`}`),
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
