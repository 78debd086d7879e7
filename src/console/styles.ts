import { createHash } from 'node:crypto';

/**
 * The console's one style sheet, inlined in every page and allowed by its hash; the console has no script at all
 * (docs/console.md, "Safety"). Wide tables scroll inside their box, so nothing widens the page on a phone.
 */
export const CSS = `*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1f24;background:#eef1f5}
header{background:#17324d;color:#fff;padding:8px 12px;display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center}
header a{color:#fff}
header .brand{font-weight:700;margin-right:8px}
nav{display:flex;flex-wrap:wrap;gap:4px 12px;flex:1 1 auto}
nav a{text-decoration:none;padding:4px 2px}
nav a[aria-current]{border-bottom:2px solid #fff}
header form{margin:0}
main{max-width:1100px;margin:0 auto;padding:12px}
h1{font-size:1.3rem;margin:8px 0 12px}
h2{font-size:1.05rem;margin:16px 0 8px}
.card{background:#fff;border-radius:10px;padding:12px;box-shadow:0 1px 3px rgba(0,0,0,.12);margin:0 0 12px;min-width:0}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(220px,1fr));gap:12px}
.figure{font-size:1.5rem;font-weight:700;margin:2px 0;overflow-wrap:anywhere}
.label{font-size:.85rem;color:#5b6470;margin:0}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid #e3e7ec;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.wrap{word-break:break-all}
form.inline{display:inline}
.fields{display:flex;flex-wrap:wrap;gap:8px;align-items:flex-end}
label{display:flex;flex-direction:column;font-size:.85rem;color:#5b6470;gap:2px}
input,select,textarea{font:inherit;padding:6px 8px;border:1px solid #b8c0ca;border-radius:6px;max-width:100%;min-width:0}
button{font:inherit;padding:6px 12px;border-radius:6px;border:1px solid #0b5cd5;background:#0b5cd5;color:#fff;cursor:pointer;min-height:36px}
button.quiet{background:#fff;color:#0b5cd5}
header button{background:transparent;border-color:#fff}
.notice{overflow-wrap:anywhere;padding:8px 12px;border-radius:8px;margin:0 0 12px;background:#e6f4ea;border:1px solid #1a7f37}
.refusal{overflow-wrap:anywhere;padding:8px 12px;border-radius:8px;margin:0 0 12px;background:#fdecea;border:1px solid #b42318}
.secret{font-family:ui-monospace,monospace;background:#fff8e1;padding:8px;border-radius:6px;word-break:break-all}
.paging{display:flex;flex-wrap:wrap;gap:4px 12px;margin:8px 0}
svg.chart{width:100%;height:auto;display:block}
.signin{max-width:420px;margin:10vh auto}
.signin input{width:100%}
.muted{color:#5b6470}`;

const hashOf = (s: string) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;

/** The policy of every console answer: this style, images from here, forms to here, nothing else (no script). */
export const CONSOLE_CSP = [
  "default-src 'none'",
  `style-src ${hashOf(CSS)}`,
  "img-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** Every console answer: no framing, no referrer, no caching of admin data, no sniffing, and the policy above. */
export const CONSOLE_HEADERS: Record<string, string> = {
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Content-Security-Policy': CONSOLE_CSP,
};
