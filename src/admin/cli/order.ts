import { cmd, type Command, enc, get, post, S, str } from './kit.js';

/** The `order` commands, in help order. */
export const orderCommands: readonly Command[] = [
  cmd({ noun: 'order', verb: 'show', usage: 'CODE', summary: 'one order with its owner and codes (decrypted, usage refreshed)', args: ['CODE'], call: ({ CODE }) => get(`/admin/v1/orders/${enc(CODE)}`) }),
  cmd({
    noun: 'order', verb: 'list', usage: '[--user U]', summary: 'newest 100 orders, of one user (id or name) with --user',
    options: { user: S },
    call: (_, o) => {
      const u = str(o, 'user');
      return get(u === undefined ? '/admin/v1/orders' : `/admin/v1/orders?user=${enc(u)}`);
    },
  }),
  cmd({
    noun: 'order', verb: 'refund', usage: 'CODE', summary: 'give the total back; codes return to stock only if never shown',
    args: ['CODE'], call: ({ CODE }) => post(`/admin/v1/orders/${enc(CODE)}/refund`),
  }),
];
