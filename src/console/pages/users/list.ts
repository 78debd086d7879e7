import { userCreateBody } from '../../../admin/schemas.js';
import { CONSOLE_ACTOR } from '../../action.js';
import { html } from '../../html.js';
import { moneyText } from '../../i18n.js';
import { csrfField } from '../../layout.js';
import type { ConsoleDeps, ConsoleRouter, Ctx } from '../../page.js';
import { detail } from './detail.js';
import { T } from './texts.js';

/** A list of addresses as a person types it: commas or spaces between them. */
export const ipsOf = (text: string | undefined): string[] => (text ?? '').split(/[\s,]+/).filter(Boolean);

/** The users list and the create form; a created user opens on its page with its key shown once. */
export function registerUserList(r: ConsoleRouter, deps: ConsoleDeps): void {
  async function list(ctx: Ctx, o: { refusal?: string; status?: number } = {}) {
    const { t, lang, csrf } = ctx;
    const users = await deps.users.list();
    return {
      title: t(T.name),
      at: '/console/users',
      ...o,
      body: html`<form class="card" method="post" action="/console/users"><h2>${t(T.create)}</h2>${csrfField(csrf)}<div class="fields">
<label>${t(T.userName)}<input name="name" required maxlength="100" value="${ctx.form.name ?? ''}"></label>
<label>${t(T.openingBalance)}<input name="balance" inputmode="decimal" value="${ctx.form.balance ?? ''}"></label>
<label>${t(T.ips)}<input name="ips" value="${ctx.form.ips ?? ''}"></label>
<button type="submit">${t(T.create)}</button></div></form>
<div class="card"><div class="scroll"><table id="users"><thead><tr><th>#</th><th>${t(T.userName)}</th><th>${t(T.api)}</th><th class="num">${t(T.balance)}</th><th>${t(T.keyHint)}</th></tr></thead><tbody>
${users.map(
  (u) => html`<tr><td>${u.id}</td><td><a href="/console/users/${u.id}">${u.name}</a></td><td>${u.api_enabled ? t(T.on) : t(T.off)}</td>
<td class="num">${moneyText(u.balance, lang)}</td><td class="wrap">${u.api_key_hint}</td></tr>`,
)}
</tbody></table></div>${users.length === 0 ? html`<p>${t(T.none)}</p>` : ''}</div>`,
    };
  }
  r.get('/console/users', async (ctx) => list(ctx));
  r.post('/console/users', async (ctx) => {
    const input = { name: ctx.form.name ?? '', ...(ctx.form.balance ? { balance: ctx.form.balance } : {}), ips: ipsOf(ctx.form.ips) };
    const body = ctx.parse(userCreateBody, input);
    if (!body.ok) return list(ctx, { refusal: body.message, status: body.status });
    const done = await ctx.action('adminCreateUser', { body: body.value }, () => deps.users.create(body.value, CONSOLE_ACTOR));
    if (!done.ok) return list(ctx, { refusal: done.message, status: done.status });
    return detail(ctx, deps, String(done.value.id), { shown: { key: done.value.api_key }, notice: ctx.t(T.done) });
  });
}
