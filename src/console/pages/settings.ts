import { masked } from '../../admin/routes.js';
import { settingKeyParams, settingSetBody } from '../../admin/schemas.js';
import { html } from '../html.js';
import { csrfField } from '../layout.js';
import type { ConsolePage, Ctx } from '../page.js';

const T = {
  name: { vi: 'Cài đặt', en: 'Settings' },
  key: { vi: 'Khoá', en: 'Key' },
  value: { vi: 'Giá trị', en: 'Value' },
  source: { vi: 'Nguồn', en: 'Source' },
  help: { vi: 'Ý nghĩa', en: 'Meaning' },
  change: { vi: 'Đổi', en: 'Change' },
  empty: { vi: 'để trống = mặc định', en: 'empty = default' },
  secret: { vi: 'bí mật: không bao giờ hiển thị', en: 'secret: never shown' },
  changed: { vi: 'Đã đổi', en: 'Changed' },
};

/** Settings (docs/console.md, "Pages"): the list with secrets masked as the admin API lists them, one form per key. */
export const settingsPage: ConsolePage = {
  href: '/console/settings',
  name: T.name,
  register(r, deps) {
    async function page(ctx: Ctx, o: { notice?: string; refusal?: string; status?: number } = {}) {
      const { t, csrf } = ctx;
      const rows = (await deps.settings.list()).map(masked);
      return {
        title: t(T.name),
        at: '/console/settings',
        ...o,
        body: html`<div class="card"><div class="scroll"><table id="settings"><thead><tr><th>${t(T.key)}</th><th>${t(T.value)}</th><th>${t(T.help)}</th></tr></thead><tbody>
${rows.map(
  (s) => html`<tr id="setting-${s.key}"><td><strong>${s.key}</strong><br><span class="muted">${s.source}</span></td>
<td><form method="post" action="/console/settings/${s.key}" class="fields">${csrfField(csrf)}
<input name="value" aria-label="${s.key}" value="${s.secret ? '' : s.value}" placeholder="${s.secret ? (s.value ? s.value : t(T.empty)) : t(T.empty)}" maxlength="4096">
<button type="submit" class="quiet">${t(T.change)}</button></form>${s.secret ? html`<span class="muted">${t(T.secret)}</span>` : ''}</td>
<td class="muted">${s.help}</td></tr>`,
)}
</tbody></table></div></div>`,
      };
    }
    r.get('/console/settings', async (ctx) => page(ctx, ctx.query.done ? { notice: `${ctx.t(T.changed)}: ${ctx.query.done}` } : {}));
    r.post('/console/settings/:key', async (ctx) => {
      const params = ctx.parse(settingKeyParams, ctx.params, 'params');
      const body = ctx.parse(settingSetBody, { value: ctx.form.value ?? '' });
      if (!params.ok) return page(ctx, { refusal: params.message, status: params.status });
      if (!body.ok) return page(ctx, { refusal: body.message, status: body.status });
      const key = params.value.key;
      const done = await ctx.action('adminSetSetting', { params: { key }, body: body.value }, () =>
        deps.settings.set(key, body.value.value),
      );
      if (!done.ok) return page(ctx, { refusal: done.message, status: done.status });
      return { redirect: `/console/settings?done=${encodeURIComponent(key)}` };
    });
  },
};
