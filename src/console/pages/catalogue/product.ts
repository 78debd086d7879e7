import { productIdParams, productUpdateBody } from '../../../admin/schemas.js';
import { overrideBody } from '../../../admin/sync-routes.js';
import { linesOf } from '../../../admin/upload.js';
import { AppError } from '../../../http/errors.js';
import { DomainError } from '../../../shared/domain-error.js';
import { html, type Html } from '../../html.js';
import { countText, moneyText, timeText } from '../../i18n.js';
import { csrfField } from '../../layout.js';
import type { ConsoleDeps, ConsoleRouter, Ctx, Outcome, PageAnswer } from '../../page.js';
import { given, numberField, orThrow, textField } from '../form-input.js';
import { T } from './texts.js';

type Shown = { notice?: string; refusal?: string; status?: number };

/** One product: its facts and stock, the form of its kind (local: edit, codes or a ZIP; source: its override). */
async function productPage(ctx: Ctx, deps: ConsoleDeps, id: string, o: Shown = {}): Promise<PageAnswer> {
  const { t, lang, csrf, timeZone } = ctx;
  const p = (await deps.catalog.listProductsAdmin()).find((x) => x.id === id);
  if (!p) throw new DomainError('not_found', `No product ${id}`);
  const base = `/console/catalogue/products/${p.id}`;
  const local = p.source === 'local';
  const [files, overrides] = await Promise.all([
    local && p.type === 'file' ? deps.files.list(p.id) : [],
    local ? null : deps.sourceOverrides.list(),
  ]);
  const ov = overrides?.products.find((x) => x.product_id === p.id);
  const button = (path: string, label: string) =>
    html`<form class="inline" method="post" action="${base}/${path}">${csrfField(csrf)}<button type="submit" class="quiet">${label}</button></form>`;
  const uploadForm = (path: string, title: string, accept: string, id: string): Html =>
    html`<form class="card" id="${id}" method="post" action="${base}/${path}" enctype="multipart/form-data"><h2>${title}</h2>${csrfField(csrf)}<div class="fields">
<label>${t(T.file)}<input type="file" name="file" accept="${accept}" required></label><button type="submit">${t(T.upload)}</button></div></form>`;
  const edit = html`<form class="card" method="post" action="${base}/update"><h2>${t(T.edit)}</h2>${csrfField(csrf)}<div class="fields">
<label>${t(T.title)}<input name="name" maxlength="200" value="${p.name}"></label>
<label>${t(T.price)}<input name="price" inputmode="decimal" value="${p.price.toString()}"></label>
<label>${t(T.minQty)}<input name="min_qty" inputmode="numeric" size="5" value="${p.min_qty}"></label>
<label>${t(T.maxQty)}<input name="max_qty" inputmode="numeric" size="5" value="${p.max_qty}"></label>
<button type="submit">${t(T.save)}</button></div></form>`;
  const override = html`<form class="card" method="post" action="${base}/override"><h2>${t(T.override)}</h2>${csrfField(csrf)}<p class="muted">${t(T.emptyKeeps)}</p><div class="fields">
<label>${t(T.priceAdjust)}<input name="price_adjust" inputmode="decimal" placeholder="${ov?.price_adjust?.toString() ?? ''}"></label>
<label>${t(T.fixedPrice)}<input name="fixed_price" inputmode="decimal" placeholder="${ov?.fixed_price?.toString() ?? ''}"></label>
<label>${t(T.title)}<input name="name" maxlength="200" placeholder="${ov?.name ?? ''}"></label>
<button type="submit">${t(T.save)}</button></div></form><p>${button('override/clear', t(T.clearOverride))}</p>`;
  const fileList = html`<div class="card"><h2>${t(T.files)}</h2><div class="scroll"><table id="files"><thead><tr><th>#</th><th>${t(T.file)}</th><th class="num">${t(T.size)}</th><th>SHA-256</th><th></th></tr></thead><tbody>
${files.map((x) => html`<tr><td>${x.id}</td><td class="wrap">${x.filename}</td><td class="num">${countText(x.size_bytes, lang)}</td><td class="wrap muted">${x.sha256}</td><td>${timeText(x.created_at, lang, timeZone)}</td></tr>`)}
</tbody></table></div>${files.length === 0 ? html`<p>${t(T.noFiles)}</p>` : ''}</div>`;
  return {
    title: `${t(T.products)} · ${p.name}`,
    at: base,
    ...o,
    body: html`<div class="card"><table id="product"><tbody>
<tr><th>#</th><td>${p.id}</td></tr><tr><th>${t(T.type)}</th><td>${p.type}</td></tr><tr><th>${t(T.source)}</th><td>${p.source}</td></tr>
<tr><th>${t(T.price)}</th><td id="price">${moneyText(p.price, lang)}</td></tr>
<tr><th>${t(T.stock)}</th><td id="stock">${countText(p.stock, lang)}</td></tr>
<tr><th>${t(T.status)}</th><td>${p.status} · ${p.hidden ? t(T.hidden) : t(T.shown)}</td></tr></tbody></table>
<p>${p.hidden ? button('show', t(T.show)) : button('hide', t(T.hide))}</p></div>
${local ? edit : override}
${local && p.type === 'code' ? uploadForm('codes', t(T.importCodes), '.txt,.csv,text/plain', 'import-codes') : ''}
${local && p.type === 'file' ? html`${uploadForm('files', t(T.attach), '.zip,application/zip', 'attach-file')}${fileList}` : ''}`,
  };
}

/** A product's page and its verbs, each the admin API route's service call under that route's audit spec. */
export function registerCatalogueProduct(r: ConsoleRouter, deps: ConsoleDeps): void {
  const idOf = (ctx: Ctx) => orThrow(ctx.parse(productIdParams, ctx.params, 'params')).id;
  async function after<V>(ctx: Ctx, id: string, done: Outcome<V>, notice?: (v: V) => string): Promise<PageAnswer> {
    if (!done.ok) return productPage(ctx, deps, id, { refusal: done.message, status: done.status });
    return productPage(ctx, deps, id, { notice: notice ? notice(done.value) : ctx.t(T.done) });
  }

  r.get('/console/catalogue/products/:id', async (ctx) =>
    productPage(ctx, deps, idOf(ctx), ctx.query.done ? { notice: ctx.t(T.done) } : {}),
  );
  r.post('/console/catalogue/products/:id/update', async (ctx) => {
    const id = idOf(ctx);
    const f = ctx.form;
    const body = ctx.parse(
      productUpdateBody,
      given({ name: textField(f.name), price: textField(f.price), min_qty: numberField(f.min_qty), max_qty: numberField(f.max_qty) }),
    );
    if (!body.ok) return after(ctx, id, body);
    return after(
      ctx,
      id,
      await ctx.action('adminUpdateProduct', { params: { id }, body: body.value }, () => deps.catalog.updateProduct(id, body.value)),
    );
  });
  // Hiding a local product is its own field; a source product is hidden by its override, as the CLI does it.
  for (const [verb, hidden] of [
    ['hide', true],
    ['show', false],
  ] as const) {
    r.post(`/console/catalogue/products/:id/${verb}`, async (ctx) => {
      const id = idOf(ctx);
      const p = (await deps.catalog.listProductsAdmin()).find((x) => x.id === id);
      if (p?.source === 'api') {
        const body = { hidden };
        return after(ctx, id, await ctx.action('adminSetOverride', { params: { id }, body }, () => deps.sourceOverrides.set(id, body)));
      }
      const body = { hidden };
      return after(ctx, id, await ctx.action('adminUpdateProduct', { params: { id }, body }, () => deps.catalog.updateProduct(id, body)));
    });
  }
  r.post('/console/catalogue/products/:id/override', async (ctx) => {
    const id = idOf(ctx);
    const f = ctx.form;
    const body = ctx.parse(
      overrideBody,
      given({ price_adjust: textField(f.price_adjust), fixed_price: textField(f.fixed_price), name: textField(f.name) }),
    );
    if (!body.ok) return after(ctx, id, body);
    return after(
      ctx,
      id,
      await ctx.action('adminSetOverride', { params: { id }, body: body.value }, () => deps.sourceOverrides.set(id, body.value)),
    );
  });
  r.post('/console/catalogue/products/:id/override/clear', async (ctx) => {
    const id = idOf(ctx);
    return after(ctx, id, await ctx.action('adminClearOverride', { params: { id } }, () => deps.sourceOverrides.clear(id)));
  });

  /** The upload's file, or the admin API's refusal of a form without one. */
  const fileOf = (ctx: Ctx) => {
    if (!ctx.file) throw new AppError('unsupported_media_type', 'Send the file as multipart/form-data, field `file`');
    return ctx.file;
  };
  // Codes: bounded by UPLOAD_MAX_BYTES as the admin API's import is; a file past it is refused whole.
  r.upload(
    '/console/catalogue/products/:id/codes',
    async (ctx) => {
      const id = idOf(ctx);
      const file = fileOf(ctx);
      const done = await ctx.action('adminImportCodes', { params: { id } }, () =>
        deps.catalog.importCodes(id, linesOf(file.stream, deps.uploadMaxBytes)),
      );
      file.stream.resume();
      return after(
        ctx,
        id,
        done,
        (v) => `${ctx.t(T.imported)}: ${v.imported}; ${ctx.t(T.skipped)}: ${v.skipped}; ${ctx.t(T.invalid)}: ${v.invalid}`,
      );
    },
    { maxBytes: deps.uploadMaxBytes },
  );
  // A ZIP: the files service bounds it by FILE_MAX_BYTES while it streams it to disk, as for the admin API.
  r.upload(
    '/console/catalogue/products/:id/files',
    async (ctx) => {
      const id = idOf(ctx);
      const file = fileOf(ctx);
      const done = await ctx.action('adminAttachFile', { params: { id } }, () => deps.files.attach(id, file.filename, file.stream));
      file.stream.resume();
      return after(ctx, id, done, (v) => `${ctx.t(T.attached)}: ${v.filename} (${countText(v.size_bytes, ctx.lang)} B)`);
    },
    { maxBytes: Number.MAX_SAFE_INTEGER },
  );
}
