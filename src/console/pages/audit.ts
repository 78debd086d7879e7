import { AUDIT_ACTIONS } from '../../admin/audit-actions.js';
import { html } from '../html.js';
import { timeText } from '../i18n.js';
import type { ConsolePage } from '../page.js';
import { limitOf, pageOf, pager } from '../paging.js';

const T = {
  name: { vi: 'Nhật ký quản trị', en: 'Audit trail' },
  action: { vi: 'Hành động', en: 'Action' },
  all: { vi: '(tất cả)', en: '(all)' },
  at: { vi: 'Lúc', en: 'At' },
  actor: { vi: 'Ai', en: 'Actor' },
  target: { vi: 'Đối tượng', en: 'Target' },
  summary: { vi: 'Tóm tắt', en: 'Summary' },
  requestId: { vi: 'Mã yêu cầu', en: 'Request id' },
  none: { vi: 'Chưa có dòng nào.', en: 'No rows.' },
  filter: { vi: 'Lọc', en: 'Filter' },
};

/** The actions offered by the filter: every admin action, and the console's own sign-in and sign-out. */
const ACTIONS = [...new Set([...Object.values(AUDIT_ACTIONS).map((a) => a.action), 'console.sign_in', 'console.sign_out'])].sort();

/** The audit trail (docs/console.md, "Pages"): newest first, filtered by action, paged by row. */
export const auditPage: ConsolePage = {
  href: '/console/audit',
  name: T.name,
  register(r, deps) {
    r.get('/console/audit', async (ctx) => {
      const { t, lang, timeZone } = ctx;
      const action = (ctx.query.action ?? '').slice(0, 100);
      const before = /^\d{1,15}$/.test(ctx.query.before ?? '') ? Number(ctx.query.before) : undefined;
      const limit = limitOf(ctx);
      const page = pageOf(await deps.audit.list({ action: action || undefined, limit: limit + 1, before }), limit, (row) => row.id);
      const options = [...new Set([...ACTIONS, ...(action ? [action] : [])])];
      return {
        title: t(T.name),
        body: html`<form class="card fields" method="get" action="/console/audit">
<label>${t(T.action)}<select name="action"><option value="">${t(T.all)}</option>${options.map(
          (a) => html`<option value="${a}"${a === action ? html` selected` : ''}>${a}</option>`,
        )}</select></label><button type="submit">${t(T.filter)}</button></form>
<div class="card"><div class="scroll"><table id="audit"><thead><tr><th>${t(T.at)}</th><th>${t(T.actor)}</th><th>${t(T.action)}</th><th>${t(T.target)}</th><th>${t(T.summary)}</th><th>${t(T.requestId)}</th></tr></thead><tbody>
${page.rows.map(
  (
    row,
  ) => html`<tr><td>${timeText(row.at, lang, timeZone)}</td><td>${row.actor}</td><td>${row.action}</td><td class="wrap">${row.target ?? ''}</td>
<td class="wrap">${JSON.stringify(row.summary)}</td><td class="wrap muted">${row.request_id ?? ''}</td></tr>`,
)}
</tbody></table></div>${page.rows.length === 0 ? html`<p>${t(T.none)}</p>` : ''}${pager(ctx, page.next)}</div>`,
      };
    });
  },
};
