import { cmd, type Command, enc, get, post } from './kit.js';

const payment = (id: string) => `/admin/v1/pay/payments/${enc(id)}`;

/** The `pay payment` commands, in help order. */
export const payPaymentCommands: readonly Command[] = [
  cmd({
    noun: 'pay payment',
    verb: 'show',
    usage: 'PAYMENT_ID',
    summary: 'one payment request with its transitions',
    args: ['PAYMENT_ID'],
    call: ({ PAYMENT_ID }) => get(payment(PAYMENT_ID)),
  }),
  cmd({
    noun: 'pay payment',
    verb: 'approve',
    usage: 'PAYMENT_ID',
    summary: 'mark paid; writes the payment.approved webhook to the outbox',
    args: ['PAYMENT_ID'],
    call: ({ PAYMENT_ID }) => post(`${payment(PAYMENT_ID)}/approve`),
  }),
  cmd({
    noun: 'pay payment',
    verb: 'reject',
    usage: 'PAYMENT_ID',
    summary: 'refuse the payment (final)',
    args: ['PAYMENT_ID'],
    call: ({ PAYMENT_ID }) => post(`${payment(PAYMENT_ID)}/reject`),
  }),
  cmd({
    noun: 'pay payment',
    verb: 'report',
    usage: 'PAYMENT_ID',
    summary: 'the payer reports having paid (payment_reported)',
    args: ['PAYMENT_ID'],
    call: ({ PAYMENT_ID }) => post(`${payment(PAYMENT_ID)}/report`),
  }),
  cmd({
    noun: 'pay payment',
    verb: 'cancel',
    usage: 'PAYMENT_ID',
    summary: 'cancel a request not yet final',
    args: ['PAYMENT_ID'],
    call: ({ PAYMENT_ID }) => post(`${payment(PAYMENT_ID)}/cancel`),
  }),
];
