import { z } from 'zod';
import { EVENT_KINDS, OUTBOX_STATUSES } from '../../webhooks/service.js';
import { html } from '../html.js';
import { countText, timeText } from '../i18n.js';
import { csrfField } from '../layout.js';
import type { ConsoleDeps, ConsolePage, Ctx, PageAnswer } from '../page.js';
import { limitOf, pageOf, pager } from '../paging.js';
import { beforeRef, orThrow, textField } from './form-input.js';

const T = {
  name: { vi: 'Webhook', en: 'Webhooks' },
  status: { vi: 'Trạng thái', en: 'Status' },
  kind: { vi: 'Loại', en: 'Kind' },
  all: { vi: '(tất cả)', en: '(all)' },
  filter: { vi: 'Lọc', en: 'Filter' },
  event: { vi: 'Sự kiện', en: 'Event' },
  target: { vi: 'Gửi cho', en: 'For' },
  attempts: { vi: 'Số lần gửi', en: 'Attempts' },
  next: { vi: 'Lần tới', en: 'Next attempt' },
  lastError: { vi: 'Lỗi gần nhất', en: 'Last error' },
  created: { vi: 'Tạo lúc', en: 'Created' },
  delivered: { vi: 'Đã giao lúc', en: 'Delivered' },
  attemptLog: { vi: 'Các lần gửi', en: 'Attempts' },
  at: { vi: 'Lúc', en: 'At' },
  code: { vi: 'Mã HTTP', en: 'HTTP status' },
  latency: { vi: 'Thời gian (ms)', en: 'Latency (ms)' },
  answer: { vi: 'Trả lời (1 KiB đầu)', en: 'Answer (first 1 KiB)' },
  body: { vi: 'Nội dung đã gửi và ký', en: 'Body as sent and signed' },
  resend: { vi: 'Gửi lại ngay', en: 'Send again now' },
  resent: { vi: 'Đã gửi lại; trạng thái', en: 'Sent again; status' },
  none: { vi: 'Không có sự kiện nào.', en: 'No events.' },
};

const eventParams = z.object({ event_id: z.string().min(1).max(64) });
const listQuery = z.object({ status: z.enum(OUTBOX_STATUSES).optional(), kind: z.enum(EVENT_KINDS).optional() });
const options = (all: readonly string[], current: string | undefined, allText: string) =>
  html`<option value="">${allText}</option>${all.map((s) => html`<option${s === current ? html` selected` : ''}>${s}</option>`)}`;
/** Whom an event goes to: a pay client (payment events) or a reseller (order callbacks). */
const targetOf = (e: { client_id: number | null; user_id: number | null; payment_id: string | null; order_code: string | null }) =>
  e.client_id !== null
    ? html`<a href="/console/payments/clients/${e.client_id}">client #${e.client_id}</a> ${e.payment_id ?? ''}`
    : html`<a href="/console/users/${e.user_id ?? ''}">user #${e.user_id ?? ''}</a> ${e.order_code ?? ''}`;

/** One event: its state, the body as sent, every attempt, and Resend while it is delivered or dead. */
async function eventPage(
  ctx: Ctx,
  deps: ConsoleDeps,
  eventId: string,
  o: { notice?: string; refusal?: string; status?: number } = {},
): Promise<PageAnswer> {
  const { t, lang, csrf, timeZone } = ctx;
  const e = await deps.webhooks.show(eventId);
  const base = `/console/webhooks/${encodeURIComponent(e.event_id)}`;
  return {
    // The id is in the table, where it may wrap: a heading of one long word would widen a phone's page.
    title: `${t(T.name)} · ${e.event}`,
    at: base,
    ...o,
    body: html`<div class="card"><table id="event"><tbody>
<tr><th>event_id</th><td class="wrap">${e.event_id}</td></tr><tr><th>${t(T.event)}</th><td>${e.event}</td></tr><tr><th>${t(T.target)}</th><td class="wrap">${targetOf(e)}</td></tr>
<tr><th>${t(T.status)}</th><td id="event-status">${e.status}</td></tr><tr><th>${t(T.attempts)}</th><td>${countText(e.attempts, lang)}</td></tr>
<tr><th>${t(T.next)}</th><td>${timeText(e.next_attempt_at, lang, timeZone)}</td></tr><tr><th>${t(T.delivered)}</th><td>${timeText(e.delivered_at, lang, timeZone)}</td></tr>
<tr><th>${t(T.lastError)}</th><td class="wrap">${e.last_error ?? ''}</td></tr></tbody></table>
${e.status === 'pending' ? '' : html`<form method="post" action="${base}/resend">${csrfField(csrf)}<button type="submit">${t(T.resend)}</button></form>`}</div>
<div class="card"><h2>${t(T.attemptLog)}</h2><div class="scroll"><table id="attempts"><thead><tr><th>#</th><th>${t(T.at)}</th><th>${t(T.code)}</th><th class="num">${t(T.latency)}</th><th>${t(T.answer)}</th><th>${t(T.lastError)}</th></tr></thead><tbody>
${e.attempt_log.map(
  (a) =>
    html`<tr><td>${a.attempt}</td><td>${timeText(a.at, lang, timeZone)}</td><td>${a.status_code ?? ''}</td><td class="num">${a.latency_ms}</td><td class="wrap">${a.response ?? ''}</td><td class="wrap">${a.error ?? ''}</td></tr>`,
)}
</tbody></table></div></div>
<div class="card"><h2>${t(T.body)}</h2><p class="secret">${e.body}</p></div>`,
  };
}

/** Webhooks (docs/console.md, "Webhooks"): the outbox by status and kind, keyset pages, one event's attempts, resend. */
export const webhooksPage: ConsolePage = {
  href: '/console/webhooks',
  name: T.name,
  register(r, deps) {
    r.get('/console/webhooks', async (ctx) => {
      const { t, lang, timeZone } = ctx;
      const f = ctx.parse(listQuery, { status: textField(ctx.query.status), kind: textField(ctx.query.kind) }, 'querystring');
      if (!f.ok) throw Object.assign(new Error(f.message), { statusCode: f.status });
      const limit = limitOf(ctx);
      const page = pageOf(await deps.webhooks.list({ ...f.value, before: beforeRef(ctx) }, limit + 1), limit, (e) => e.event_id);
      return {
        title: t(T.name),
        body: html`<form class="card fields" method="get" action="/console/webhooks">
<label>${t(T.status)}<select name="status">${options(OUTBOX_STATUSES, f.value.status, t(T.all))}</select></label>
<label>${t(T.kind)}<select name="kind">${options(EVENT_KINDS, f.value.kind, t(T.all))}</select></label><button type="submit">${t(T.filter)}</button></form>
<div class="card"><div class="scroll"><table id="events"><thead><tr><th>event_id</th><th>${t(T.event)}</th><th>${t(T.target)}</th><th>${t(T.status)}</th><th class="num">${t(T.attempts)}</th><th>${t(T.lastError)}</th><th>${t(T.created)}</th></tr></thead><tbody>
${page.rows.map(
  (
    e,
  ) => html`<tr><td class="wrap"><a href="/console/webhooks/${encodeURIComponent(e.event_id)}">${e.event_id}</a></td><td>${e.event}</td><td class="wrap">${targetOf(e)}</td><td>${e.status}</td>
<td class="num">${e.attempts}</td><td class="wrap">${e.last_error ?? ''}</td><td>${timeText(e.created_at, lang, timeZone)}</td></tr>`,
)}
</tbody></table></div>${page.rows.length === 0 ? html`<p>${t(T.none)}</p>` : ''}${pager(ctx, page.next)}</div>`,
      };
    });
    const idOf = (ctx: Ctx) => orThrow(ctx.parse(eventParams, ctx.params, 'params')).event_id;
    r.get('/console/webhooks/:event_id', async (ctx) => eventPage(ctx, deps, idOf(ctx)));
    r.post('/console/webhooks/:event_id/resend', async (ctx) => {
      const id = idOf(ctx);
      const done = await ctx.action('adminWebhookResend', { params: { event_id: id } }, () => deps.webhooks.resend(id));
      if (!done.ok) return eventPage(ctx, deps, id, { refusal: done.message, status: done.status });
      return eventPage(ctx, deps, id, { notice: `${ctx.t(T.resent)}: ${done.value.status}` });
    });
  },
};
