import { cmd, type Command, enc, get, S } from './kit.js';

/** The `pay transaction` commands, in help order. */
export const payTransactionCommands: readonly Command[] = [
  cmd({
    noun: 'pay transaction',
    verb: 'list',
    usage: '[--status approved|unmatched|amount_mismatch|late|ignored|ambiguous]',
    summary: 'bank-feed transactions (SePay, Casso) and what became of each',
    options: { status: S },
    call: (_, o) => get(`/admin/v1/pay/transactions${o.status === undefined ? '' : `?status=${enc(String(o.status))}`}`),
  }),
];
