import { z } from 'zod';
import { paymentParams } from '../../../admin/pay-routes.js';
import { PAYMENT_STATUSES } from '../../../db/schema/payment-statuses.js';
import { TRANSACTION_STATUSES } from '../../../payments/bank-feeds.js';
import type { PaymentStatus } from '../../../payments/service.js';
import { CONSOLE_ACTOR } from '../../action.js';
import { html } from '../../html.js';
import { moneyText, timeText } from '../../i18n.js';
import { csrfField } from '../../layout.js';
import type { ConsoleDeps, ConsoleRouter, Ctx, PageAnswer } from '../../page.js';
import { limitOf, pageOf, pager } from '../../paging.js';
import { beforeId, beforeRef, orThrow, textField } from '../form-input.js';
import { subnav } from './kit.js';
import { T } from './texts.js';

/** The admin verbs on a request (the payer's report among them) and the state each moves it to, as the admin API's routes (src/admin/pay-routes.ts). */
const VERBS = [
  ['approve', 'approved', 'adminPaymentApprove', T.approve],
  ['reject', 'rejected', 'adminPaymentReject', T.reject],
  ['cancel', 'cancelled', 'adminPaymentCancel', T.cancel],
  ['report', 'payment_reported', 'adminPaymentReport', T.report],
] as const;
const FINAL = new Set(['approved', 'rejected', 'cancelled', 'expired']);

const statusFilter = <S extends string>(all: readonly S[], ctx: Ctx, name = 'status') => {
  const parsed = z
    .enum(all as unknown as [S, ...S[]])
    .optional()
    .safeParse(textField(ctx.query[name]));
  if (!parsed.success)
    throw Object.assign(new Error(`Invalid querystring: querystring.${name} must be one of ${all.join(', ')}`), { statusCode: 400 });
  return parsed.data;
};
const options = (all: readonly string[], current: string | undefined, allText: string) =>
  html`<option value="">${allText}</option>${all.map((s) => html`<option${s === current ? html` selected` : ''}>${s}</option>`)}`;

/** A payment request with its transitions, and the verbs its state still allows. */
async function requestPage(
  ctx: Ctx,
  deps: ConsoleDeps,
  paymentId: string,
  o: { notice?: string; refusal?: string; status?: number } = {},
): Promise<PageAnswer> {
  const { t, lang, csrf, timeZone } = ctx;
  const p = await deps.payments.adminShow(paymentId);
  const base = `/console/payments/requests/${encodeURIComponent(p.payment_id)}`;
  return {
    // The id is in the table, where it may wrap: a heading of one long word would widen a phone's page.
    title: t(T.requests),
    at: base,
    ...o,
    body: html`${subnav(ctx, '/console/payments/requests')}<div class="card"><table id="payment"><tbody>
<tr><th>payment_id</th><td class="wrap">${p.payment_id}</td></tr><tr><th>${t(T.invoice)}</th><td class="wrap">${p.merchant_invoice_id}</td></tr>
<tr><th>${t(T.client)}</th><td><a href="/console/payments/clients/${p.client_id}">#${p.client_id}</a></td></tr>
<tr><th>${t(T.amount)}</th><td>${moneyText(p.amount, lang)}</td></tr><tr><th>${t(T.status)}</th><td id="payment-status">${p.status}</td></tr>
<tr><th>${t(T.description)}</th><td class="wrap">${p.description}</td></tr>
<tr><th>${t(T.transferNote)}</th><td class="wrap">${p.payment?.transfer_content ?? ''}</td></tr>
<tr><th>${t(T.expires)}</th><td>${timeText(p.payment?.expires_at, lang, timeZone)}</td></tr></tbody></table>
${FINAL.has(p.status) ? '' : html`<p>${VERBS.filter(([, to]) => to !== p.status).map(([verb, , , label]) => html`<form class="inline" method="post" action="${base}/${verb}">${csrfField(csrf)}<button type="submit"${verb === 'approve' ? '' : html` class="quiet"`}>${t(label)}</button></form> `)}</p>`}</div>
<div class="card"><h2>${t(T.transitions)}</h2><div class="scroll"><table id="transitions"><thead><tr><th>${t(T.at)}</th><th>${t(T.from)}</th><th>${t(T.to)}</th><th>${t(T.actor)}</th></tr></thead><tbody>
${p.transitions.map((x) => html`<tr><td>${timeText(x.at, lang, timeZone)}</td><td>${x.from_status ?? ''}</td><td>${x.to_status}</td><td>${x.actor}</td></tr>`)}
</tbody></table></div></div>`,
  };
}

/** Payment requests (filter by status, keyset pages, detail, approve/reject/cancel/report) and the bank-feed transactions. */
export function registerPayRequests(r: ConsoleRouter, deps: ConsoleDeps): void {
  r.get('/console/payments/requests', async (ctx) => {
    const { t, lang, timeZone } = ctx;
    const status = statusFilter(PAYMENT_STATUSES, ctx);
    const limit = limitOf(ctx);
    const page = pageOf(await deps.payments.adminList({ status, before: beforeRef(ctx) }, limit + 1), limit, (p) => p.payment_id);
    return {
      title: t(T.requests),
      body: html`${subnav(ctx, '/console/payments/requests')}<form class="card fields" method="get" action="/console/payments/requests">
<label>${t(T.status)}<select name="status">${options(PAYMENT_STATUSES, status, t(T.all))}</select></label><button type="submit">${t(T.filter)}</button></form>
<div class="card"><div class="scroll"><table id="payments"><thead><tr><th>payment_id</th><th>${t(T.invoice)}</th><th>${t(T.client)}</th><th class="num">${t(T.amount)}</th><th>${t(T.status)}</th><th>${t(T.created)}</th></tr></thead><tbody>
${page.rows.map(
  (
    p,
  ) => html`<tr><td class="wrap"><a href="/console/payments/requests/${encodeURIComponent(p.payment_id)}">${p.payment_id}</a></td><td class="wrap">${p.merchant_invoice_id}</td><td>#${p.client_id}</td>
<td class="num">${moneyText(p.amount, lang)}</td><td>${p.status}</td><td>${timeText(p.created_at, lang, timeZone)}</td></tr>`,
)}
</tbody></table></div>${page.rows.length === 0 ? html`<p>${t(T.none)}</p>` : ''}${pager(ctx, page.next)}</div>`,
    };
  });
  const idOf = (ctx: Ctx) => orThrow(ctx.parse(paymentParams, ctx.params, 'params')).payment_id;
  r.get('/console/payments/requests/:payment_id', async (ctx) => requestPage(ctx, deps, idOf(ctx)));
  for (const [verb, to, op] of VERBS) {
    r.post(`/console/payments/requests/:payment_id/${verb}`, async (ctx) => {
      const id = idOf(ctx);
      const done = await ctx.action(op, { params: { payment_id: id } }, () =>
        deps.payments.transition(id, to as PaymentStatus, CONSOLE_ACTOR),
      );
      if (!done.ok) return requestPage(ctx, deps, id, { refusal: done.message, status: done.status });
      return requestPage(ctx, deps, id, { notice: `${ctx.t(T.done)}: ${to}` });
    });
  }

  r.get('/console/payments/transactions', async (ctx) => {
    const { t, lang } = ctx;
    const status = statusFilter(TRANSACTION_STATUSES, ctx);
    const limit = limitOf(ctx);
    const page = pageOf(await deps.bankFeeds.list(status, { limit: limit + 1, before: beforeId(ctx) }), limit, (x) => x.id);
    return {
      title: t(T.transactions),
      body: html`${subnav(ctx, '/console/payments/transactions')}<form class="card fields" method="get" action="/console/payments/transactions">
<label>${t(T.status)}<select name="status">${options(TRANSACTION_STATUSES, status, t(T.all))}</select></label><button type="submit">${t(T.filter)}</button></form>
<div class="card"><div class="scroll"><table id="transactions"><thead><tr><th>#</th><th>${t(T.feed)}</th><th>${t(T.reference)}</th><th class="num">${t(T.amount)}</th><th>${t(T.content)}</th><th>${t(T.status)}</th><th>${t(T.payment)}</th></tr></thead><tbody>
${page.rows.map(
  (
    x,
  ) => html`<tr><td>${x.id}</td><td>${x.feed}</td><td class="wrap">${x.reference ?? ''}</td><td class="num">${moneyText(x.amount, lang)}</td><td class="wrap">${x.content}</td><td>${x.status}</td>
<td class="wrap">${x.payment_id ? html`<a href="/console/payments/requests/${encodeURIComponent(x.payment_id)}">${x.payment_id}</a>` : ''}</td></tr>`,
)}
</tbody></table></div>${page.rows.length === 0 ? html`<p>${t(T.none)}</p>` : ''}${pager(ctx, page.next)}</div>`,
    };
  });
}
