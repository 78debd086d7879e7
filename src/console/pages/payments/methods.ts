import { codeParams, methodCreateBody, methodUpdateBody } from '../../../admin/pay-routes.js';
import { html } from '../../html.js';
import { csrfField } from '../../layout.js';
import type { ConsoleDeps, ConsoleRouter, Ctx, PageAnswer } from '../../page.js';
import { orThrow, textField } from '../form-input.js';
import { subnav } from './kit.js';
import { T } from './texts.js';

type Shown = { notice?: string; refusal?: string; status?: number };

/** The per-method verbs, each the admin API's PATCH /pay/methods/{code} with one change (docs/admin.md, "pay method"). */
const VERBS = [
  ['activate', { active: true }],
  ['deactivate', { active: false }],
  ['make-default', { make_default: true }],
] as const;

/** Payment methods: every one (inactive ones included), a create form, and activate/deactivate/make default. */
export function registerPayMethods(r: ConsoleRouter, deps: ConsoleDeps): void {
  async function list(ctx: Ctx, o: Shown = {}): Promise<PageAnswer> {
    const { t, csrf } = ctx;
    const methods = await deps.payMethods.list();
    const f = ctx.form;
    const verb = (code: string, path: string, label: string) =>
      html`<form class="inline" method="post" action="/console/payments/methods/${encodeURIComponent(code)}/${path}">${csrfField(csrf)}<button type="submit" class="quiet">${label}</button></form> `;
    const field = (name: string, label: string, extra = html` required`) =>
      html`<label>${label}<input name="${name}"${extra} value="${f[name] ?? ''}"></label>`;
    return {
      title: t(T.methods),
      at: '/console/payments/methods',
      ...o,
      body: html`${subnav(ctx, '/console/payments/methods')}<div class="card"><div class="scroll"><table id="methods"><thead><tr><th>${t(T.code)}</th><th>${t(T.clientName)}</th><th>${t(T.bank)}</th><th>${t(T.account)}</th><th>${t(T.status)}</th><th></th></tr></thead><tbody>
${methods.map(
  (m) =>
    html`<tr id="method-${m.code}"><td>${m.code}</td><td class="wrap">${m.name}</td><td class="wrap">${m.bank_name} (${m.bank_bin}${m.bank_code ? ` · ${m.bank_code}` : ''})</td><td class="wrap">${m.account_number} · ${m.account_name}</td>
<td class="method-state">${m.active ? t(T.active) : t(T.inactive)}${m.is_default ? html` · <strong>${t(T.isDefault)}</strong>` : ''}</td>
<td>${m.active ? verb(m.code, 'deactivate', t(T.deactivate)) : verb(m.code, 'activate', t(T.activate))}${m.active && !m.is_default ? verb(m.code, 'make-default', t(T.makeDefault)) : ''}</td></tr>`,
)}
</tbody></table></div>${methods.length === 0 ? html`<p>${t(T.none)}</p>` : ''}</div>
<form class="card" method="post" action="/console/payments/methods"><h2>${t(T.newMethod)}</h2>${csrfField(csrf)}<div class="fields">
${field('code', t(T.code), html` required maxlength="32" pattern="[A-Za-z0-9_\\-]{1,32}"`)}${field('bank_bin', t(T.bankBin), html` required inputmode="numeric" maxlength="6" pattern="[0-9]{6}"`)}
${field('bank_name', t(T.bankName), html` required maxlength="100"`)}${field('bank_code', t(T.bankCode), html` maxlength="32"`)}
${field('account_number', t(T.accountNumber), html` required maxlength="19"`)}${field('account_name', t(T.accountName), html` required maxlength="100"`)}
${field('name', t(T.methodName), html` maxlength="100"`)}
<label><span><input type="checkbox" name="activate" value="true"${f.activate === 'true' ? html` checked` : ''}> ${t(T.activate)}</span></label>
<label><span><input type="checkbox" name="make_default" value="true"${f.make_default === 'true' ? html` checked` : ''}> ${t(T.makeDefault)}</span></label>
<button type="submit">${t(T.newMethod)}</button></div></form>`,
    };
  }

  r.get('/console/payments/methods', async (ctx) => list(ctx));
  r.post('/console/payments/methods', async (ctx) => {
    const f = ctx.form;
    const body = ctx.parse(methodCreateBody, {
      code: f.code ?? '',
      bank_bin: f.bank_bin ?? '',
      bank_name: f.bank_name ?? '',
      account_number: f.account_number ?? '',
      account_name: f.account_name ?? '',
      ...(textField(f.name) ? { name: textField(f.name) } : {}),
      ...(textField(f.bank_code) ? { bank_code: textField(f.bank_code) } : {}),
      ...(f.activate === 'true' ? { activate: true } : {}),
      ...(f.make_default === 'true' ? { make_default: true } : {}),
    });
    if (!body.ok) return list(ctx, { refusal: body.message, status: body.status });
    const done = await ctx.action('adminPayMethodCreate', { body: body.value }, () => deps.payMethods.create(body.value));
    if (!done.ok) return list(ctx, { refusal: done.message, status: done.status });
    return list({ ...ctx, form: {} }, { notice: `${ctx.t(T.done)}: ${done.value.code}` });
  });
  for (const [path, change] of VERBS) {
    r.post(`/console/payments/methods/:code/${path}`, async (ctx) => {
      const { code } = orThrow(ctx.parse(codeParams, ctx.params, 'params'));
      const body = orThrow(ctx.parse(methodUpdateBody, change));
      const done = await ctx.action('adminPayMethodUpdate', { params: { code }, body }, () => deps.payMethods.update(code, body));
      if (!done.ok) return list(ctx, { refusal: done.message, status: done.status });
      return list(ctx, { notice: `${ctx.t(T.done)}: ${done.value.code}` });
    });
  }
}
