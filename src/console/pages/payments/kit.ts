import { html, type Html } from '../../html.js';
import type { Ctx } from '../../page.js';
import { SUBPAGES } from './texts.js';

/** The row of links to the payments lists, the current one marked. */
export function subnav(ctx: Ctx, current: string): Html {
  return html`<p class="paging">${SUBPAGES.map(
    (s) => html`<a href="${s.href}"${s.href === current ? html` aria-current="page"` : ''}>${ctx.t(s.name)}</a>`,
  )}</p>`;
}
