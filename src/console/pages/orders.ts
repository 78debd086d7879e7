import { z } from 'zod';
import { orderSummary } from '../../ordering/service.js';
import { CONSOLE_ACTOR } from '../action.js';
import { html } from '../html.js';
import { moneyText, timeText } from '../i18n.js';
import { csrfField } from '../layout.js';
import type { ConsoleDeps, ConsolePage, Ctx, PageAnswer } from '../page.js';
import { limitOf, pageOf, pager } from '../paging.js';
import { orThrow, textField } from './form-input.js';

const T = {
  name: { vi: 'Đơn hàng', en: 'Orders' },
  search: { vi: 'Tìm', en: 'Search' },
  code: { vi: 'Mã đơn', en: 'Order code' },
  requestId: { vi: 'request_id', en: 'request_id' },
  user: { vi: 'Người dùng (id hoặc tên)', en: 'User (id or name)' },
  status: { vi: 'Trạng thái', en: 'Status' },
  all: { vi: '(tất cả)', en: '(all)' },
  product: { vi: 'Sản phẩm', en: 'Product' },
  qty: { vi: 'SL', en: 'Qty' },
  unitPrice: { vi: 'Đơn giá', en: 'Unit price' },
  total: { vi: 'Tổng', en: 'Total' },
  at: { vi: 'Lúc', en: 'At' },
  owner: { vi: 'Người mua', en: 'Buyer' },
  message: { vi: 'Thông báo', en: 'Message' },
  delivered: { vi: 'Giao lúc', en: 'Delivered' },
  codes: { vi: 'Mã đã giao', en: 'Codes delivered' },
  codesHidden: {
    vi: 'Giá trị mã không hiển thị ở đây (API quản trị và CLI hiển thị chúng).',
    en: 'Code values are not shown here (the admin API and the CLI show them).',
  },
  upstream: { vi: 'Đơn ở trang nguồn', en: 'At the source site' },
  refund: { vi: 'Hoàn tiền đơn này', en: 'Refund this order' },
  refunded: { vi: 'Đã hoàn tiền', en: 'Refunded' },
  none: { vi: 'Không có đơn nào.', en: 'No orders.' },
};

const STATUSES = ['pending', 'success', 'failed', 'refunded'] as const;
/** The list's filters, bounded as the admin API's order list bounds them. */
const listQuery = z.object({
  user: z.string().max(100).optional(),
  request_id: z.string().max(100).optional(),
  status: z.enum(STATUSES).optional(),
  before: z.string().max(64).optional(),
});
const codeParams = z.object({ code: z.string().min(1).max(64) });

/** One order with its owner and its codes' state (never their values), and the refund form while it can be refunded. */
async function orderPage(
  ctx: Ctx,
  deps: ConsoleDeps,
  code: string,
  o: { notice?: string; refusal?: string; status?: number } = {},
): Promise<PageAnswer> {
  const { t, lang, csrf, timeZone } = ctx;
  const order = await deps.delivery.adminShow(code);
  const row = (label: string, value: unknown, id?: string) =>
    html`<tr><th>${label}</th><td${id ? html` id="${id}"` : ''} class="wrap">${value as string}</td></tr>`;
  return {
    title: `${t(T.name)} · ${order.order_code}`,
    at: `/console/orders/${encodeURIComponent(order.order_code)}`,
    ...o,
    body: html`<div class="card"><table id="order"><tbody>
${row(t(T.code), order.order_code)}${row(t(T.requestId), order.request_id ?? '')}${row(t(T.status), order.status, 'order-status')}
<tr><th>${t(T.owner)}</th><td><a href="/console/users/${order.user_id}">${order.user_name}</a> (#${order.user_id})</td></tr>
${row(t(T.product), `${order.product_name} (#${order.product_id})`)}${row(t(T.qty), order.quantity)}
${row(t(T.unitPrice), moneyText(order.unit_price, lang))}${row(t(T.total), moneyText(order.total, lang))}
${row(t(T.at), timeText(order.created_at, lang, timeZone))}${row(t(T.delivered), timeText(order.delivered_at, lang, timeZone))}
${row(t(T.message), order.message)}${order.upstream ? row(t(T.upstream), `${order.upstream_order_code ?? ''} ${order.upstream_issue ?? ''}`) : ''}
</tbody></table>
${
  order.status === 'success'
    ? html`<form method="post" action="/console/orders/${encodeURIComponent(order.order_code)}/refund">${csrfField(csrf)}<button type="submit">${t(T.refund)}</button></form>`
    : ''
}</div>
<div class="card"><h2>${t(T.codes)}: ${order.codes.length}</h2><p class="muted">${t(T.codesHidden)}</p>
<ol>${order.codes.map((c) => html`<li>${c.status_label}</li>`)}</ol></div>`,
  };
}

/** Orders (docs/console.md, "Orders"): search by order code, request_id or user, filter by status, keyset pages on id. */
export const ordersPage: ConsolePage = {
  href: '/console/orders',
  name: T.name,
  register(r, deps) {
    r.get('/console/orders', async (ctx) => {
      const { t, lang, timeZone } = ctx;
      const q = ctx.query;
      // An order code typed in the search opens that order.
      const code = textField(q.code);
      if (code) return { redirect: `/console/orders/${encodeURIComponent(code.slice(0, 64))}` };
      const f = ctx.parse(
        listQuery,
        { user: textField(q.user), request_id: textField(q.request_id), status: textField(q.status), before: textField(q.before) },
        'querystring',
      );
      if (!f.ok) throw Object.assign(new Error(f.message), { statusCode: f.status });
      const limit = limitOf(ctx);
      const userId = f.value.user !== undefined ? (await deps.users.find(f.value.user)).id : undefined;
      const rows = await deps.delivery.adminList(
        { userId, status: f.value.status, requestId: f.value.request_id, before: f.value.before },
        limit + 1,
      );
      const page = pageOf(rows, limit, (o) => o.order_code);
      return {
        title: t(T.name),
        body: html`<form class="card fields" method="get" action="/console/orders">
<label>${t(T.code)}<input name="code" maxlength="64"></label>
<label>${t(T.requestId)}<input name="request_id" maxlength="100" value="${q.request_id ?? ''}"></label>
<label>${t(T.user)}<input name="user" maxlength="100" value="${q.user ?? ''}"></label>
<label>${t(T.status)}<select name="status"><option value="">${t(T.all)}</option>${STATUSES.map((s) => html`<option${s === f.value.status ? html` selected` : ''}>${s}</option>`)}</select></label>
<button type="submit">${t(T.search)}</button></form>
<div class="card"><div class="scroll"><table id="orders"><thead><tr><th>${t(T.code)}</th><th>${t(T.requestId)}</th><th>#</th><th>${t(T.product)}</th><th class="num">${t(T.qty)}</th><th class="num">${t(T.total)}</th><th>${t(T.status)}</th><th>${t(T.at)}</th></tr></thead><tbody>
${page.rows.map(
  (
    o,
  ) => html`<tr><td><a href="/console/orders/${encodeURIComponent(o.order_code)}">${o.order_code}</a></td><td class="wrap">${o.request_id ?? ''}</td><td>${o.user_id}</td><td>${o.product_name}</td>
<td class="num">${o.quantity}</td><td class="num">${moneyText(o.total, lang)}</td><td>${o.status}${o.stuck ? ' ⚠' : ''}</td><td>${timeText(o.created_at, lang, timeZone)}</td></tr>`,
)}
</tbody></table></div>${page.rows.length === 0 ? html`<p>${t(T.none)}</p>` : ''}${pager(ctx, page.next)}</div>`,
      };
    });
    r.get('/console/orders/:code', async (ctx) => orderPage(ctx, deps, orThrow(ctx.parse(codeParams, ctx.params, 'params')).code));
    r.post('/console/orders/:code/refund', async (ctx) => {
      const { code } = orThrow(ctx.parse(codeParams, ctx.params, 'params'));
      const done = await ctx.action('adminRefundOrder', { params: { code } }, async () =>
        orderSummary(await deps.orders.refund(code, CONSOLE_ACTOR)),
      );
      if (!done.ok) return orderPage(ctx, deps, code, { refusal: done.message, status: done.status });
      return orderPage(ctx, deps, code, { notice: `${ctx.t(T.refunded)}: ${moneyText(done.value.total, ctx.lang)}` });
    });
  },
};
