import { creditBody, setIpsBody, userCallbackBody, userRefParams } from '../../../admin/schemas.js';
import { auditNote } from '../../../db/audit-scope.js';
import { CONSOLE_ACTOR } from '../../action.js';
import { html, type Html } from '../../html.js';
import { moneyText, timeText } from '../../i18n.js';
import { csrfField } from '../../layout.js';
import type { ConsoleDeps, ConsoleRouter, Ctx, Outcome, PageAnswer } from '../../page.js';
import { limitOf, pageOf, pager } from '../../paging.js';
import { ipsOf } from './list.js';
import { T } from './texts.js';

/** A secret to show once on this answer: never stored in the page's URL, never on a GET. */
type Shown = { key?: string; callbackSecret?: string };

/** One user: its facts, a form per admin verb, its ledger (paged). `shown` puts a key or secret on this answer only. */
export async function detail(
  ctx: Ctx,
  deps: ConsoleDeps,
  ref: string,
  o: { shown?: Shown; notice?: string; refusal?: string; status?: number } = {},
): Promise<PageAnswer> {
  const { t, lang, csrf, timeZone } = ctx;
  const u = await deps.users.show(ref);
  const before = /^\d{1,15}$/.test(ctx.query.before ?? '') ? Number(ctx.query.before) : undefined;
  const limit = limitOf(ctx);
  const ledger = pageOf(await deps.users.ledger(String(u.id), limit + 1, { before }), limit, (row) => row.id);
  const base = `/console/users/${u.id}`;
  const button = (path: string, label: string, quiet = false) =>
    html`<form class="inline" method="post" action="${base}/${path}">${csrfField(csrf)}<button type="submit"${quiet ? html` class="quiet"` : ''}>${label}</button></form>`;
  const secret = (label: string, value: string | undefined, id: string): Html | string =>
    value ? html`<div class="card"><p class="label">${label}</p><p class="secret" id="${id}">${value}</p></div>` : '';
  return {
    title: `${t(T.name)} · ${u.name}`,
    at: base,
    notice: o.notice,
    refusal: o.refusal,
    status: o.status,
    body: html`${secret(t(T.keyOnce), o.shown?.key, 'shown-key')}${secret(t(T.secretOnce), o.shown?.callbackSecret, 'shown-secret')}
<div class="card"><table id="user"><tbody>
<tr><th>#</th><td>${u.id}</td></tr><tr><th>${t(T.userName)}</th><td>${u.name}</td></tr>
<tr><th>${t(T.api)}</th><td>${u.api_enabled ? t(T.on) : t(T.off)}</td></tr>
<tr><th>${t(T.keyHint)}</th><td class="wrap">${u.api_key_hint}</td></tr>
<tr><th>${t(T.balance)}</th><td id="balance">${moneyText(u.balance, lang)}</td></tr>
<tr><th>${t(T.created)}</th><td>${timeText(u.created_at, lang, timeZone)}</td></tr></tbody></table>
<p>${button('show-key', t(T.showKey), true)} ${button('rotate-key', t(T.rotateKey))} ${u.api_enabled ? button('disable', t(T.disable), true) : button('enable', t(T.enable))}</p></div>
<form class="card" method="post" action="${base}/credit"><h2>${t(T.move)}</h2>${csrfField(csrf)}<div class="fields">
<label>${t(T.move)}<select name="direction"><option value="credit">${t(T.credit)}</option><option value="debit">${t(T.debit)}</option></select></label>
<label>${t(T.amount)}<input name="amount" inputmode="decimal" required></label>
<label>${t(T.reason)}<input name="note" maxlength="500" required></label><button type="submit">${t(T.apply)}</button></div></form>
<form class="card" method="post" action="${base}/ips">${csrfField(csrf)}<div class="fields">
<label>${t(T.ips)}<input name="ips" value="${u.allowed_ips.join(', ')}"></label><button type="submit">${t(T.setIps)}</button></div></form>
<div class="card"><form method="post" action="${base}/callback">${csrfField(csrf)}<div class="fields">
<label>${t(T.callbackUrl)}<input name="callback_url" type="url" maxlength="2000" value="${u.callback_url ?? ''}"></label>
<label><span><input type="checkbox" name="allow_private_targets" value="true"${u.allow_private_targets ? html` checked` : ''}> ${t(T.privateTargets)}</span></label>
<button type="submit">${t(T.setCallback)}</button></div></form><p>${button('callback-secret', t(T.rotateSecret), true)}</p></div>
<div class="card"><h2>${t(T.ledger)}</h2><div class="scroll"><table id="ledger"><thead><tr><th>#</th><th>${t(T.at)}</th><th>${t(T.kind)}</th><th class="num">${t(T.amount)}</th><th class="num">${t(T.after)}</th><th>${t(T.reason)}</th><th>${t(T.actor)}</th></tr></thead><tbody>
${ledger.rows.map(
  (
    l,
  ) => html`<tr><td>${l.id}</td><td>${timeText(l.created_at, lang, timeZone)}</td><td>${l.kind}</td><td class="num">${moneyText(l.amount, lang)}</td>
<td class="num">${moneyText(l.balance_after, lang)}</td><td class="wrap">${l.note ?? ''} ${l.ref ?? ''}</td><td>${l.actor ?? ''}</td></tr>`,
)}
</tbody></table></div>${ledger.rows.length === 0 ? html`<p>${t(T.noLedger)}</p>` : ''}${pager(ctx, ledger.next, base)}</div>`,
  };
}

/** A user's page and its verbs; each verb is the admin API route's service call, audited as that route with actor console. */
export function registerUserDetail(r: ConsoleRouter, deps: ConsoleDeps): void {
  /** The page again after a verb: its refusal with the API's status, or its notice and a secret shown once. */
  async function after<T>(ctx: Ctx, ref: string, done: Outcome<T>, shown?: (v: T) => Shown): Promise<PageAnswer> {
    if (!done.ok) return detail(ctx, deps, ref, { refusal: done.message, status: done.status });
    return detail(ctx, deps, ref, { notice: ctx.t(T.done), shown: shown?.(done.value) });
  }
  /** A verb on the user of the path; a path that names no user answers the service's own not_found. */
  function verb(path: string, run: (ctx: Ctx, ref: string) => Promise<PageAnswer>) {
    r.post(`/console/users/:ref/${path}`, async (ctx) => {
      const p = ctx.parse(userRefParams, ctx.params, 'params');
      if (!p.ok) throw Object.assign(new Error(p.message), { statusCode: p.status });
      return run(ctx, p.value.ref);
    });
  }

  r.get('/console/users/:ref', async (ctx) => {
    const p = ctx.parse(userRefParams, ctx.params, 'params');
    if (!p.ok) throw Object.assign(new Error(p.message), { statusCode: p.status });
    return detail(ctx, deps, p.value.ref);
  });
  verb('show-key', async (ctx, ref) => {
    // A read of a secret, after an explicit action: recorded as the backup download is (docs/console.md, "Safety").
    const done = await ctx.action('user.show_key', { params: { ref } }, async () => {
      const u = await deps.users.show(ref);
      auditNote({ target: `user:${u.id}` });
      return u;
    });
    return after(ctx, ref, done, (u) => ({ key: u.api_key }));
  });
  verb('rotate-key', async (ctx, ref) =>
    after(ctx, ref, await ctx.action('adminRotateKey', { params: { ref } }, () => deps.users.rotateKey(ref)), (u) => ({ key: u.api_key })),
  );
  verb('disable', async (ctx, ref) =>
    after(ctx, ref, await ctx.action('adminDisableUser', { params: { ref } }, () => deps.users.setEnabled(ref, false))),
  );
  verb('enable', async (ctx, ref) =>
    after(ctx, ref, await ctx.action('adminEnableUser', { params: { ref } }, () => deps.users.setEnabled(ref, true))),
  );
  verb('ips', async (ctx, ref) => {
    const body = ctx.parse(setIpsBody, { ips: ipsOf(ctx.form.ips) });
    if (!body.ok) return after(ctx, ref, body);
    return after(
      ctx,
      ref,
      await ctx.action('adminSetUserIps', { params: { ref }, body: body.value }, () => deps.users.setIps(ref, body.value.ips)),
    );
  });
  verb('callback', async (ctx, ref) => {
    const body = ctx.parse(userCallbackBody, {
      callback_url: ctx.form.callback_url ?? '',
      allow_private_targets: ctx.form.allow_private_targets === 'true',
    });
    if (!body.ok) return after(ctx, ref, body);
    const done = await ctx.action('adminUpdateUser', { params: { ref }, body: body.value }, () =>
      deps.users.updateCallback(ref, body.value),
    );
    return after(ctx, ref, done, (u) => ({ callbackSecret: u.callback_secret }));
  });
  verb('callback-secret', async (ctx, ref) => {
    const done = await ctx.action('adminRotateCallbackSecret', { params: { ref } }, () => deps.users.rotateCallbackSecret(ref));
    return after(ctx, ref, done, (v) => ({ callbackSecret: v.callback_secret }));
  });
  verb('credit', async (ctx, ref) => {
    const raw = (ctx.form.amount ?? '').trim();
    const amount = ctx.form.direction === 'debit' && raw !== '' ? `-${raw}` : raw;
    const body = ctx.parse(creditBody, { amount, ...(ctx.form.note ? { note: ctx.form.note } : {}) });
    if (!body.ok) return after(ctx, ref, body);
    const done = await ctx.action('adminCreditUser', { params: { ref }, body: body.value }, () =>
      deps.users.credit(ref, body.value.amount, body.value.note, CONSOLE_ACTOR),
    );
    if (!done.ok) return after(ctx, ref, done);
    return detail(ctx, deps, ref, { notice: `${ctx.t(T.moved)}: ${moneyText(done.value.balance, ctx.lang)}` });
  });
}
