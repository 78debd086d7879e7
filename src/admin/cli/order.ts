import { B, cmd, type Command, enc, get, post, S, str } from './kit.js';

/** The `order` commands, in help order. */
export const orderCommands: readonly Command[] = [
  cmd({
    noun: 'order',
    verb: 'show',
    usage: 'CODE',
    summary: 'one order with its owner and codes (decrypted, usage refreshed)',
    args: ['CODE'],
    call: ({ CODE }) => get(`/admin/v1/orders/${enc(CODE)}`),
  }),
  cmd({
    noun: 'order',
    verb: 'list',
    usage: '[--user U] [--status S] [--stuck] [--test]',
    summary:
      'newest 100 orders; of one user (id or name) with --user, one status with --status; --stuck: source orders pending past upstream_stuck_minutes; --test: test orders instead of live ones',
    options: { user: S, status: S, stuck: B, test: B },
    call: (_, o) => {
      const q = new URLSearchParams();
      for (const k of ['user', 'status'] as const) if (str(o, k) !== undefined) q.set(k, str(o, k)!);
      if (o.stuck) q.set('stuck', 'true');
      if (o.test) q.set('test', 'true');
      const qs = q.toString();
      return get(qs ? `/admin/v1/orders?${qs}` : '/admin/v1/orders');
    },
  }),
  cmd({
    noun: 'order',
    verb: 'refund',
    usage: 'CODE',
    summary: 'give the total back; codes return to stock only if never shown',
    args: ['CODE'],
    call: ({ CODE }) => post(`/admin/v1/orders/${enc(CODE)}/refund`),
  }),
];
