import { categoryCreateBody, productCreateBody, productIdParams } from '../../../admin/schemas.js';
import { markCodesBody } from '../../../admin/order-routes.js';
import { categoryOverrideBody } from '../../../admin/sync-routes.js';
import { html } from '../../html.js';
import { countText, moneyText } from '../../i18n.js';
import { csrfField } from '../../layout.js';
import type { ConsoleDeps, ConsoleRouter, Ctx, PageAnswer } from '../../page.js';
import { given, numberField, orThrow, textField } from '../form-input.js';
import { T } from './texts.js';

type Shown = { notice?: string; refusal?: string; status?: number };

/**
 * Categories (create; a source category's markup), every product with its stock (a created product opens on its page),
 * and codes marked used or unused.
 */
export function registerCatalogueList(r: ConsoleRouter, deps: ConsoleDeps): void {
  async function list(ctx: Ctx, o: Shown = {}): Promise<PageAnswer> {
    const { t, lang, csrf } = ctx;
    const [cats, products, overrides] = await Promise.all([
      deps.catalog.listCategories(true),
      deps.catalog.listProductsAdmin(),
      deps.sourceOverrides.list(),
    ]);
    const markupOf = new Map(overrides.categories.map((c) => [c.category_id, c.markup_percent]));
    const nameOf = new Map(cats.map((c) => [c.id, c.name]));
    const f = ctx.form;
    return {
      title: t(T.name),
      at: '/console/catalogue',
      ...o,
      body: html`<div class="card"><h2>${t(T.categories)}</h2><div class="scroll"><table id="categories"><thead><tr><th>#</th><th>${t(T.title)}</th><th>${t(T.parent)}</th><th>${t(T.source)}</th><th>${t(T.markup)}</th></tr></thead><tbody>
${cats.map(
  (c) =>
    html`<tr><td>${c.id}</td><td>${c.name}</td><td>${c.parent_id ? (nameOf.get(c.parent_id) ?? c.parent_id) : ''}</td><td>${c.source}</td><td>${
      c.source === 'api'
        ? html`<form method="post" action="/console/catalogue/categories/${c.id}/markup" class="fields">${csrfField(csrf)}<input name="markup_percent" inputmode="decimal" size="6" aria-label="${t(T.markup)}" value="${markupOf.get(c.id) ?? ''}"><button type="submit" class="quiet">${t(T.setMarkup)}</button></form>`
        : ''
    }</td></tr>`,
)}
</tbody></table></div>${cats.length === 0 ? html`<p>${t(T.noCategories)}</p>` : ''}
<form method="post" action="/console/catalogue/categories">${csrfField(csrf)}<div class="fields">
<label>${t(T.title)}<input name="name" required maxlength="200"></label>
<label>${t(T.parent)}<select name="parent_id"><option value="">${t(T.none)}</option>${cats.map((c) => html`<option value="${c.id}">${c.name}</option>`)}</select></label>
<label>${t(T.sort)}<input name="sort" inputmode="numeric" size="5"></label><button type="submit">${t(T.newCategory)}</button></div></form></div>
<div class="card"><h2>${t(T.products)}</h2><div class="scroll"><table id="products"><thead><tr><th>#</th><th>${t(T.title)}</th><th>${t(T.category)}</th><th>${t(T.type)}</th><th class="num">${t(T.price)}</th><th class="num">${t(T.stock)}</th><th>${t(T.status)}</th><th>${t(T.source)}</th></tr></thead><tbody>
${products.map(
  (
    p,
  ) => html`<tr id="product-${p.id}"><td>${p.id}</td><td><a href="/console/catalogue/products/${p.id}">${p.name}</a>${p.hidden ? html` <span class="muted">(${t(T.hidden)})</span>` : ''}</td>
<td>${nameOf.get(p.category_id) ?? p.category_id}</td><td>${p.type}</td><td class="num">${moneyText(p.price, lang)}</td><td class="num stock">${countText(p.stock, lang)}</td><td>${p.status}</td><td>${p.source}</td></tr>`,
)}
</tbody></table></div>${products.length === 0 ? html`<p>${t(T.noProducts)}</p>` : ''}</div>
<form class="card" method="post" action="/console/catalogue/products"><h2>${t(T.newProduct)}</h2>${csrfField(csrf)}<div class="fields">
<label>${t(T.category)}<select name="category_id" required>${cats
        .filter((c) => c.source === 'local')
        .map((c) => html`<option value="${c.id}"${f.category_id === c.id ? html` selected` : ''}>${c.name}</option>`)}</select></label>
<label>${t(T.title)}<input name="name" required maxlength="200" value="${f.name ?? ''}"></label>
<label>${t(T.price)}<input name="price" inputmode="decimal" required value="${f.price ?? ''}"></label>
<label>${t(T.type)}<select name="type">${['code', 'file', 'service'].map((x) => html`<option${f.type === x ? html` selected` : ''}>${x}</option>`)}</select></label>
<label>${t(T.minQty)}<input name="min_qty" inputmode="numeric" size="5" value="${f.min_qty ?? ''}"></label>
<label>${t(T.maxQty)}<input name="max_qty" inputmode="numeric" size="5" value="${f.max_qty ?? ''}"></label>
<label><span><input type="checkbox" name="hidden" value="true"> ${t(T.hidden)}</span></label>
<button type="submit">${t(T.create)}</button></div></form>
<form class="card" method="post" action="/console/catalogue/codes/mark-used"><h2>${t(T.markUsed)}</h2>${csrfField(csrf)}<div class="fields">
<label>${t(T.codesOneALine)}<textarea name="codes" rows="4" required></textarea></label>
<label><span><input type="checkbox" name="unused" value="true"> ${t(T.unused)}</span></label><button type="submit">${t(T.markUsed)}</button></div></form>`,
    };
  }

  r.get('/console/catalogue', async (ctx) => list(ctx, ctx.query.done ? { notice: ctx.t(T.done) } : {}));
  r.post('/console/catalogue/categories', async (ctx) => {
    const body = ctx.parse(
      categoryCreateBody,
      given({ name: ctx.form.name ?? '', parent_id: textField(ctx.form.parent_id), sort: numberField(ctx.form.sort) }),
    );
    if (!body.ok) return list(ctx, { refusal: body.message, status: body.status });
    const done = await ctx.action('adminCreateCategory', { body: body.value }, () => deps.catalog.createCategory(body.value));
    if (!done.ok) return list(ctx, { refusal: done.message, status: done.status });
    return { redirect: '/console/catalogue?done=1' };
  });
  r.post('/console/catalogue/categories/:id/markup', async (ctx) => {
    const { id } = orThrow(ctx.parse(productIdParams, ctx.params, 'params'));
    const body = ctx.parse(categoryOverrideBody, { markup_percent: textField(ctx.form.markup_percent) ?? null });
    if (!body.ok) return list(ctx, { refusal: body.message, status: body.status });
    const done = await ctx.action('adminSetCategoryOverride', { params: { id }, body: body.value }, () =>
      deps.sourceOverrides.setCategory(id, body.value),
    );
    if (!done.ok) return list(ctx, { refusal: done.message, status: done.status });
    return { redirect: '/console/catalogue?done=1' };
  });
  r.post('/console/catalogue/codes/mark-used', async (ctx) => {
    const codes = (ctx.form.codes ?? '')
      .split(/\r?\n/)
      .map((c) => c.trim())
      .filter((c) => c !== '');
    const body = ctx.parse(markCodesBody, { codes, used: ctx.form.unused !== 'true' });
    if (!body.ok) return list(ctx, { refusal: body.message, status: body.status });
    const done = await ctx.action('adminMarkCodesUsed', { body: body.value }, () =>
      deps.catalog.markCodesUsed(body.value.codes, body.value.used),
    );
    if (!done.ok) return list(ctx, { refusal: done.message, status: done.status });
    // As the API answers: how many were marked, and the codes typed that match no sold code (the first 20 named).
    const { marked, not_found } = done.value;
    const more = not_found.length > 20 ? ` (+${not_found.length - 20})` : '';
    const missing = not_found.length > 0 ? `; ${ctx.t(T.notFound)}: ${not_found.slice(0, 20).join(', ')}${more}` : '';
    return list(ctx, { notice: `${ctx.t(T.marked)}: ${marked}${missing}` });
  });
  r.post('/console/catalogue/products', async (ctx) => {
    const f = ctx.form;
    const input = given({
      category_id: f.category_id ?? '',
      name: f.name ?? '',
      price: f.price ?? '',
      type: textField(f.type),
      min_qty: numberField(f.min_qty),
      max_qty: numberField(f.max_qty),
      hidden: f.hidden === 'true' ? true : undefined,
    });
    const body = ctx.parse(productCreateBody, input);
    if (!body.ok) return list(ctx, { refusal: body.message, status: body.status });
    const done = await ctx.action('adminCreateProduct', { body: body.value }, () => deps.catalog.createProduct(body.value));
    if (!done.ok) return list(ctx, { refusal: done.message, status: done.status });
    return { redirect: `/console/catalogue/products/${done.value.id}?done=1` };
  });
}
