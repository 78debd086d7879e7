import { barChart } from '../chart.js';
import { html } from '../html.js';
import { countText, moneyText, timeText } from '../i18n.js';
import type { ConsolePage } from '../page.js';

const T = {
  name: { vi: 'Tổng quan', en: 'Dashboard' },
  ordersToday: { vi: 'Đơn hàng hôm nay', en: 'Orders today' },
  revenueToday: { vi: 'Doanh thu hôm nay', en: 'Revenue today' },
  balance: { vi: 'Tổng số dư người dùng', en: "Users' total balance" },
  backlog: { vi: 'Webhook đang chờ', en: 'Webhook backlog' },
  oldest: { vi: 'Chờ lâu nhất (giây)', en: 'Oldest pending (s)' },
  dead: { vi: 'Webhook bỏ cuộc', en: 'Dead webhooks' },
  callbacks: { vi: 'Callback đơn hàng đang chờ', en: 'Order callbacks pending' },
  lastSync: { vi: 'Đồng bộ thành công gần nhất', en: 'Last successful sync' },
  never: { vi: 'chưa có', en: 'never' },
  syncOff: { vi: 'tắt (không có source_url)', en: 'off (no source_url)' },
  failures: { vi: 'Lần đồng bộ lỗi liên tiếp', en: 'Sync failures in a row' },
  stuck: { vi: 'Đơn nguồn bị kẹt', en: 'Stuck source orders' },
  payments: { vi: 'Yêu cầu thanh toán hôm nay theo trạng thái', en: 'Payment requests today by status' },
  chartOrders: { vi: 'Đơn hàng mỗi giờ, 24 giờ qua', en: 'Orders per hour, last 24 hours' },
  chartRevenue: { vi: 'Doanh thu mỗi giờ, 24 giờ qua', en: 'Revenue per hour, last 24 hours' },
  status: { vi: 'Trạng thái', en: 'Status' },
  count: { vi: 'Số lượng', en: 'Count' },
  none: { vi: 'Chưa có yêu cầu nào hôm nay.', en: 'None today.' },
};

/** The dashboard (docs/console.md, "Pages"): the read of GET /admin/v1/dashboard (src/ops/dashboard.ts). */
export const dashboardPage: ConsolePage = {
  href: '/console',
  name: T.name,
  register(r, deps) {
    r.get('/console', async ({ t, lang, timeZone }) => {
      const d = await deps.dashboard.read();
      const f = d.facts;
      const figure = (label: string, value: string, id: string) =>
        html`<div class="card"><p class="label">${label}</p><p class="figure" id="${id}">${value}</p></div>`;
      const hourLabel = (iso: string) =>
        new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit' }).format(new Date(iso));
      const labels = d.hours.map((h) => hourLabel(h.hour));
      // Bar heights only: the amounts shown as text stay the exact decimals of SQL.
      const revenue = d.hours.map((h) => Number(h.revenue));
      const statuses = Object.entries(d.paymentsToday).sort(([a], [b]) => a.localeCompare(b));
      return {
        title: t(T.name),
        body: html`<div class="grid">
${figure(t(T.ordersToday), countText(d.ordersToday, lang), 'orders-today')}
${figure(t(T.revenueToday), moneyText(d.revenueToday, lang), 'revenue-today')}
${figure(t(T.balance), moneyText(d.usersBalance, lang), 'users-balance')}
${figure(t(T.backlog), countText(f.webhooksPending, lang), 'webhooks-pending')}
${figure(t(T.oldest), countText(Math.round(f.oldestPendingSeconds), lang), 'oldest-pending')}
${figure(t(T.dead), countText(f.webhooksDead, lang), 'webhooks-dead')}
${figure(t(T.callbacks), countText(f.orderCallbacksPending, lang), 'callbacks-pending')}
${figure(t(T.lastSync), f.syncEnabled ? (f.syncLastSuccessAt ? timeText(f.syncLastSuccessAt, lang, timeZone) : t(T.never)) : t(T.syncOff), 'last-sync')}
${figure(t(T.failures), countText(f.syncConsecutiveFailures, lang), 'sync-failures')}
${figure(t(T.stuck), countText(f.stuckOrders, lang), 'stuck-orders')}
</div>
<div class="grid">
<div class="card">${barChart({ title: t(T.chartOrders), values: d.hours.map((h) => h.orders), labels, top: countText(Math.max(0, ...d.hours.map((h) => h.orders)), lang) })}</div>
<div class="card">${barChart({ title: t(T.chartRevenue), values: revenue, labels, top: moneyText(String(Math.max(0, ...revenue)), lang) })}</div>
</div>
<div class="card"><h2>${t(T.payments)}</h2><div class="scroll"><table id="payments-by-status"><thead><tr><th>${t(T.status)}</th><th class="num">${t(T.count)}</th></tr></thead><tbody>
${statuses.map(([s, n]) => html`<tr><td>${s}</td><td class="num">${countText(n, lang)}</td></tr>`)}
</tbody></table></div>${statuses.length === 0 ? html`<p>${t(T.none)}</p>` : ''}</div>`,
      };
    });
  },
};
