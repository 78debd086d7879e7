import { html, type Html } from './html.js';

/**
 * A bar chart drawn on the server as inline SVG (no script, no style attribute: the policy allows neither): one bar
 * per value, its label under every sixth bar, the largest value at the top left. Values are plain numbers of a count
 * or an amount in whole units.
 */
export function barChart(o: { title: string; values: number[]; labels: string[]; top: string }): Html {
  const w = 480;
  const h = 160;
  const pad = { l: 8, r: 8, t: 20, b: 22 };
  const max = Math.max(1, ...o.values);
  const bw = (w - pad.l - pad.r) / Math.max(1, o.values.length);
  const bars = o.values.map((v, i) => {
    const bh = ((h - pad.t - pad.b) * v) / max;
    const x = pad.l + i * bw;
    return html`<rect x="${x.toFixed(1)}" y="${(h - pad.b - bh).toFixed(1)}" width="${Math.max(1, bw - 2).toFixed(1)}" height="${bh.toFixed(1)}" fill="#0b5cd5"><title>${o.labels[i]}: ${v}</title></rect>`;
  });
  const ticks = o.labels.map((l, i) =>
    i % 6 === 0 ? html`<text x="${(pad.l + i * bw).toFixed(1)}" y="${h - 6}" font-size="11" fill="#5b6470">${l}</text>` : '',
  );
  return html`<svg class="chart" viewBox="0 0 ${w} ${h}" role="img" aria-label="${o.title}" xmlns="http://www.w3.org/2000/svg">
<text x="${pad.l}" y="13" font-size="12" fill="#1b1f24">${o.title} (max ${o.top})</text>
<line x1="${pad.l}" y1="${h - pad.b}" x2="${w - pad.r}" y2="${h - pad.b}" stroke="#b8c0ca"/>${bars}${ticks}</svg>`;
}
