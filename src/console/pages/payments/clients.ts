import { clientApproveBody, clientRequestBody, clientUpdateBody, idParams, rotateSecretBody } from '../../../admin/pay-routes.js';
import type { PayClientView } from '../../../payments/clients.js';
import { html, type Html } from '../../html.js';
import { timeText } from '../../i18n.js';
import { csrfField } from '../../layout.js';
import type { ConsoleDeps, ConsoleRouter, Ctx, Outcome, PageAnswer } from '../../page.js';
import { ipsOf } from '../users/list.js';
import { numberField, orThrow } from '../form-input.js';
import { subnav } from './kit.js';
import { T } from './texts.js';

type Shown = { notice?: string; refusal?: string; status?: number };

/** The credentials of an approval or a rotation, on that answer only (never on a GET, never in a URL). */
function secrets(ctx: Ctx, c: PayClientView | undefined): Html | string {
  const items = c
    ? ([
        ['api_key', c.api_key],
        ['api_secret', c.api_secret],
        ['webhook_secret', c.webhook_secret],
      ] as const)
    : [];
  const shown = items.filter(([, v]) => v);
  if (shown.length === 0) return '';
  return html`<div class="card" id="shown-secrets"><p class="label">${ctx.t(T.secretsOnce)}</p>${shown.map(
    ([k, v]) => html`<p class="label">${k}</p><p class="secret" id="shown-${k}">${v}</p>`,
  )}</div>`;
}

/** Payment clients: the list and an access request form; a client's page with approval, IPs, settings, on/off and rotation. */
export function registerPayClients(r: ConsoleRouter, deps: ConsoleDeps): void {
  async function list(ctx: Ctx, o: Shown = {}): Promise<PageAnswer> {
    const { t, csrf } = ctx;
    const clients = await deps.payClients.list();
    const f = ctx.form;
    return {
      title: t(T.name),
      at: '/console/payments',
      ...o,
      body: html`${subnav(ctx, '/console/payments')}<div class="card"><h2>${t(T.clients)}</h2><div class="scroll"><table id="clients"><thead><tr><th>#</th><th>${t(T.clientName)}</th><th>${t(T.domain)}</th><th>${t(T.status)}</th><th>${t(T.ips)}</th></tr></thead><tbody>
${clients.map(
  (c) =>
    html`<tr><td>${c.id}</td><td><a href="/console/payments/clients/${c.id}">${c.name}</a></td><td class="wrap">${c.domain}</td><td>${c.status}</td><td class="wrap">${c.allowed_ips.join(', ')}</td></tr>`,
)}
</tbody></table></div>${clients.length === 0 ? html`<p>${t(T.none)}</p>` : ''}</div>
<form class="card" method="post" action="/console/payments/clients"><h2>${t(T.newRequest)}</h2>${csrfField(csrf)}<div class="fields">
<label>${t(T.clientName)}<input name="name" required maxlength="100" value="${f.name ?? ''}"></label>
<label>${t(T.domain)}<input name="domain" required maxlength="253" value="${f.domain ?? ''}"></label>
<label>${t(T.webhookUrl)}<input name="webhook_url" type="url" required maxlength="2000" value="${f.webhook_url ?? ''}"></label>
<label>${t(T.ips)}<input name="ips" value="${f.ips ?? ''}"></label><button type="submit">${t(T.newRequest)}</button></div></form>`,
    };
  }

  async function clientPage(ctx: Ctx, id: string, o: Shown & { shown?: PayClientView } = {}): Promise<PageAnswer> {
    const { t, lang, csrf, timeZone } = ctx;
    // The page draws none of its credentials: they appear once, in `shown`, on the answer that made them.
    const client = await deps.payClients.show(id);
    const base = `/console/payments/clients/${client.id}`;
    const button = (path: string, label: string) =>
      html`<form class="inline" method="post" action="${base}/${path}">${csrfField(csrf)}<button type="submit" class="quiet">${label}</button></form>`;
    const approve = html`<form class="card" method="post" action="${base}/approve"><h2>${t(T.approve)}</h2>${csrfField(csrf)}<div class="fields">
<label>${t(T.ips)}<input name="ips" required value="${client.allowed_ips.join(', ')}"></label>
<label><span><input type="checkbox" name="allow_private_targets" value="true"> ${t(T.privateTargets)}</span></label>
<button type="submit">${t(T.approve)}</button></div></form>`;
    const manage = html`<form class="card" method="post" action="${base}/ips">${csrfField(csrf)}<div class="fields">
<label>${t(T.ips)}<input name="ips" value="${client.allowed_ips.join(', ')}"></label><button type="submit">${t(T.setIps)}</button></div></form>
<form class="card" method="post" action="${base}/settings"><h2>${t(T.settings)}</h2>${csrfField(csrf)}<div class="fields">
<label>${t(T.webhookUrl)}<input name="webhook_url" type="url" required maxlength="2000" value="${client.webhook_url}"></label>
<label>${t(T.events)}<input name="events" value="${client.events.join(', ')}"></label>
<label><span><input type="checkbox" name="allow_private_targets" value="true"${client.allow_private_targets ? html` checked` : ''}> ${t(T.privateTargets)}</span></label>
<button type="submit">${t(T.save)}</button></div></form>
<form class="card" method="post" action="${base}/rotate-secret"><h2>${t(T.rotate)}</h2>${csrfField(csrf)}<div class="fields">
<label>${t(T.grace)}<input name="grace_seconds" inputmode="numeric" value="0" size="8"></label><button type="submit">${t(T.rotate)}</button></div></form>`;
    return {
      title: `${t(T.clients)} · ${client.name}`,
      at: base,
      ...o,
      body: html`${subnav(ctx, '/console/payments')}${secrets(ctx, o.shown)}<div class="card"><table id="client"><tbody>
<tr><th>#</th><td>${client.id}</td></tr><tr><th>${t(T.clientName)}</th><td>${client.name}</td></tr>
<tr><th>${t(T.domain)}</th><td class="wrap">${client.domain}</td></tr><tr><th>${t(T.webhookUrl)}</th><td class="wrap">${client.webhook_url}</td></tr>
<tr><th>${t(T.status)}</th><td id="client-status">${client.status}</td></tr><tr><th>${t(T.ips)}</th><td class="wrap">${client.allowed_ips.join(', ')}</td></tr>
<tr><th>${t(T.approvedAt)}</th><td>${timeText(client.approved_at, lang, timeZone)}</td></tr>
<tr><th>${t(T.prevUntil)}</th><td>${timeText(client.previous_secret_valid_until, lang, timeZone)}</td></tr></tbody></table>
${client.status === 'requested' ? '' : html`<p>${client.status === 'active' ? button('disable', t(T.disable)) : button('enable', t(T.enable))}</p>`}</div>
${client.status === 'requested' ? approve : manage}`,
    };
  }
  const idOf = (ctx: Ctx) => orThrow(ctx.parse(idParams, ctx.params, 'params')).id;
  async function after(ctx: Ctx, id: string, done: Outcome<PayClientView>, showSecrets = false): Promise<PageAnswer> {
    if (!done.ok) return clientPage(ctx, id, { refusal: done.message, status: done.status });
    return clientPage(ctx, id, { notice: ctx.t(T.done), shown: showSecrets ? done.value : undefined });
  }

  r.get('/console/payments', async (ctx) => list(ctx));
  r.post('/console/payments/clients', async (ctx) => {
    const f = ctx.form;
    const body = ctx.parse(clientRequestBody, {
      name: f.name ?? '',
      domain: f.domain ?? '',
      webhook_url: f.webhook_url ?? '',
      ips: ipsOf(f.ips),
    });
    if (!body.ok) return list(ctx, { refusal: body.message, status: body.status });
    const done = await ctx.action('adminPayClientRequest', { body: body.value }, () => deps.payClients.request(body.value));
    if (!done.ok) return list(ctx, { refusal: done.message, status: done.status });
    return { redirect: `/console/payments/clients/${done.value.id}` };
  });
  r.get('/console/payments/clients/:id', async (ctx) => clientPage(ctx, idOf(ctx)));
  r.post('/console/payments/clients/:id/approve', async (ctx) => {
    const id = idOf(ctx);
    const body = ctx.parse(clientApproveBody, {
      ips: ipsOf(ctx.form.ips),
      ...(ctx.form.allow_private_targets === 'true' ? { allow_private_targets: true } : {}),
    });
    if (!body.ok) return after(ctx, id, body);
    return after(
      ctx,
      id,
      await ctx.action('adminPayClientApprove', { params: { id }, body: body.value }, () => deps.payClients.approve(id, body.value)),
      true,
    );
  });
  r.post('/console/payments/clients/:id/ips', async (ctx) => {
    const id = idOf(ctx);
    const ips = ipsOf(ctx.form.ips);
    const body = ctx.parse(clientApproveBody.pick({ ips: true }), { ips });
    if (!body.ok) return after(ctx, id, body);
    return after(
      ctx,
      id,
      await ctx.action('adminPayClientSetIps', { params: { id }, body: { ips } }, () => deps.payClients.setIps(id, ips)),
    );
  });
  r.post('/console/payments/clients/:id/settings', async (ctx) => {
    const id = idOf(ctx);
    const f = ctx.form;
    const current = await deps.payClients.show(id);
    // An unchanged URL is not sent, as `pay client update` without --webhook-url: the audit row names what changed.
    const url = (f.webhook_url ?? '').trim();
    const body = ctx.parse(clientUpdateBody, {
      ...(url === current.webhook_url ? {} : { webhook_url: url }),
      allow_private_targets: f.allow_private_targets === 'true',
      events: (f.events ?? '')
        .split(',')
        .map((e) => e.trim())
        .filter((e) => e !== ''),
    });
    if (!body.ok) return after(ctx, id, body);
    return after(
      ctx,
      id,
      await ctx.action('adminPayClientUpdate', { params: { id }, body: body.value }, () => deps.payClients.update(id, body.value)),
    );
  });
  for (const [verb, enabled, op] of [
    ['disable', false, 'adminPayClientDisable'],
    ['enable', true, 'adminPayClientEnable'],
  ] as const) {
    r.post(`/console/payments/clients/:id/${verb}`, async (ctx) => {
      const id = idOf(ctx);
      return after(ctx, id, await ctx.action(op, { params: { id } }, () => deps.payClients.setEnabled(id, enabled)));
    });
  }
  r.post('/console/payments/clients/:id/rotate-secret', async (ctx) => {
    const id = idOf(ctx);
    const body = ctx.parse(rotateSecretBody, { grace_seconds: numberField(ctx.form.grace_seconds) ?? 0 });
    if (!body.ok) return after(ctx, id, body);
    const done = await ctx.action('adminPayClientRotateSecret', { params: { id }, body: body.value }, () =>
      deps.payClients.rotateSecret(id, body.value.grace_seconds),
    );
    // Only the new API secret: the key and the webhook secret did not change.
    return after(ctx, id, done.ok ? { ok: true, value: { ...done.value, api_key: undefined, webhook_secret: undefined } } : done, true);
  });
}
