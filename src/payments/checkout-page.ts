import { createHash } from 'node:crypto';
import { moneyOut } from '../shared/money.js';
import type { PaymentStatus } from '../db/schema/payment-statuses.js';
import type { PaymentRow } from './view.js';
import { sandboxPanel } from './checkout-sandbox.js';

/**
 * The hosted checkout page (docs/payments.md, "The hosted checkout page"): one server-rendered HTML document per payment, status
 * and language. Its CSS and script are constants inlined in the page and allowed by their hashes in the
 * Content-Security-Policy; the QR is the stored PNG data URL. Every screen is in the document; the script shows the
 * one of the status it polls, and without JavaScript a meta refresh reloads the page while the payment is open.
 */

export type Lang = 'vi' | 'en';

const TEXT = {
  vi: {
    title: 'Thanh toán chuyển khoản',
    amount: 'Số tiền',
    content: 'Nội dung chuyển khoản',
    contentHint: 'Ghi đúng nội dung này để giao dịch được xác nhận tự động.',
    bank: 'Ngân hàng',
    account: 'Số tài khoản',
    accountName: 'Chủ tài khoản',
    copy: 'Sao chép',
    copied: 'Đã chép',
    qr: 'Quét mã QR bằng ứng dụng ngân hàng',
    expiresAt: 'Hết hạn lúc',
    left: 'Còn lại',
    waiting: 'Đang chờ thanh toán…',
    reported: 'Đã ghi nhận báo chuyển khoản, đang chờ xác nhận…',
    preparing: 'Đang chuẩn bị thông tin thanh toán…',
    approved: 'Thanh toán thành công',
    approvedText: 'Chúng tôi đã nhận được khoản thanh toán của bạn.',
    expired: 'Yêu cầu thanh toán đã hết hạn',
    expiredText: 'Đừng chuyển khoản cho yêu cầu này. Hãy tạo yêu cầu mới trên trang của cửa hàng.',
    cancelled: 'Yêu cầu thanh toán đã bị huỷ',
    cancelledText: 'Đừng chuyển khoản cho yêu cầu này.',
    rejected: 'Thanh toán bị từ chối',
    rejectedText: 'Yêu cầu này đã bị từ chối. Hãy liên hệ cửa hàng nếu bạn đã chuyển khoản.',
    back: 'Quay lại cửa hàng',
    other: 'English',
  },
  en: {
    title: 'Bank transfer payment',
    amount: 'Amount',
    content: 'Transfer content',
    contentHint: 'Use exactly this content so that the transfer is matched automatically.',
    bank: 'Bank',
    account: 'Account number',
    accountName: 'Account name',
    copy: 'Copy',
    copied: 'Copied',
    qr: 'Scan the QR code with your banking app',
    expiresAt: 'Expires at',
    left: 'Time left',
    waiting: 'Waiting for your transfer…',
    reported: 'Transfer reported, waiting for confirmation…',
    preparing: 'Preparing the payment details…',
    approved: 'Payment received',
    approvedText: 'We have received your payment.',
    expired: 'This payment request has expired',
    expiredText: 'Do not transfer money for this request. Start a new one on the shop’s website.',
    cancelled: 'This payment request was cancelled',
    cancelledText: 'Do not transfer money for this request.',
    rejected: 'Payment rejected',
    rejectedText: 'This request was rejected. Contact the shop if you have already transferred money.',
    back: 'Back to the shop',
    other: 'Tiếng Việt',
  },
} as const;

/** `?lang=` wins; else the first of vi/en in Accept-Language by quality; else Vietnamese. */
export function pickLang(query: unknown, acceptLanguage: string | undefined): Lang {
  if (query === 'en' || query === 'vi') return query;
  let best: { lang: Lang; q: number } | null = null;
  for (const part of (acceptLanguage ?? '').slice(0, 512).split(',')) {
    const [tag, ...params] = part.trim().toLowerCase().split(';');
    const base = tag?.split('-')[0];
    if (base !== 'vi' && base !== 'en') continue;
    const qp = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qp ? Number(qp.slice(2)) : 1;
    if (!Number.isFinite(q) || q <= 0) continue;
    if (!best || q > best.q) best = { lang: base, q };
  }
  return best?.lang ?? 'vi';
}

const CSS = `*{box-sizing:border-box}
body{margin:0;font:16px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1f24;background:#eef1f5}
main{max-width:760px;margin:0 auto;padding:16px}
.card{background:#fff;border-radius:12px;padding:16px;box-shadow:0 1px 3px rgba(0,0,0,.12)}
h1{font-size:1.25rem;margin:0 0 12px}
.big{font-size:1.9rem;font-weight:700;letter-spacing:.02em;word-break:break-all;margin:0}
.field{margin:0 0 14px}
.label{font-size:.85rem;color:#5b6470;margin:0 0 2px}
.row{display:flex;gap:8px;align-items:center;justify-content:space-between;flex-wrap:wrap}
button{font:inherit;font-size:.95rem;padding:8px 14px;border-radius:8px;border:1px solid #0b5cd5;background:#0b5cd5;color:#fff;cursor:pointer;min-height:44px}
button.done{background:#1a7f37;border-color:#1a7f37}
.hint{font-size:.85rem;color:#5b6470;margin:4px 0 0}
.qr{text-align:center;margin:8px 0 16px}
.qr img{width:280px;max-width:100%;height:auto;image-rendering:pixelated;border:8px solid #fff}
dl{margin:0}
dt{font-size:.85rem;color:#5b6470}
dd{margin:0 0 10px;font-size:1.05rem;font-weight:600;word-break:break-all}
.status{margin:12px 0 0;padding:10px 12px;border-radius:8px;background:#fff8e1}
.timer{font-variant-numeric:tabular-nums}
.final{text-align:center;padding:32px 16px}
.final h1{font-size:1.6rem}
.ok h1{color:#1a7f37}.bad h1{color:#b42318}
a.back{display:inline-block;margin-top:16px;padding:12px 18px;border-radius:8px;background:#0b5cd5;color:#fff;text-decoration:none;font-weight:600}
.note{font-family:ui-monospace,"DejaVu Sans Mono","Liberation Mono",Menlo,Consolas,monospace;letter-spacing:0;word-break:normal;overflow-wrap:normal}
.note span{display:inline-block;white-space:nowrap;margin-right:.35em}.note span:last-child{margin-right:0}
.note.long{font-size:min(1.6rem,5.8vw)}
.lang{text-align:right;font-size:.9rem;margin:0 0 8px}
.lang a{color:#0b5cd5}
[hidden]{display:none!important}
.sandbox{background:#fff3cd;border:2px dashed #b54708;margin:0 0 12px}.sandbox p{margin:0 0 8px;color:#7a2e0e}
.sim{display:flex;gap:8px;flex-wrap:wrap;align-items:center}.sim form{margin:0}
@media (min-width:700px){.grid{display:grid;grid-template-columns:1fr 300px;gap:24px;align-items:start}.qr{margin:0}.big{font-size:2.2rem}}`;

/**
 * The page's script: copy buttons, the countdown, and the status poll. The server time of the status answer corrects
 * the device clock for the countdown; a final status shows its screen; a prepared payment reloads to show its data.
 * A refused poll (429, 5xx) is tried again after Retry-After, at least two and at most ten refresh intervals; only a
 * 404 (no such page) or a final status ends the polling.
 */
const JS = `(function(){
var d=document,b=d.body,url=b.getAttribute('data-status-url'),every=+b.getAttribute('data-refresh')*1000;
var exp=Date.parse(b.getAttribute('data-expires')||''),skew=null,shown=b.getAttribute('data-status'),timer=d.getElementById('left');
var finals={approved:1,expired:1,cancelled:1,rejected:1};
d.querySelectorAll('button[data-copy]').forEach(function(btn){btn.addEventListener('click',function(){
var t=btn.getAttribute('data-copy'),label=btn.textContent;
function ok(){btn.textContent=btn.getAttribute('data-done');btn.classList.add('done');setTimeout(function(){btn.textContent=label;btn.classList.remove('done')},2000)}
if(navigator.clipboard&&navigator.clipboard.writeText){navigator.clipboard.writeText(t).then(ok,function(){})}});});
function show(s){if(s===shown)return;shown=s;
if(s==='pending_payment'||s==='payment_reported'){if(!d.getElementById('screen-pay')){location.reload();return}
d.querySelectorAll('[data-screen]').forEach(function(e){e.hidden=e.getAttribute('data-screen')!=='pay'});
d.getElementById('reported').hidden=s!=='payment_reported';d.getElementById('waiting').hidden=s==='payment_reported';return}
d.querySelectorAll('[data-screen]').forEach(function(e){e.hidden=e.getAttribute('data-screen')!==s});}
function tick(){if(!timer||isNaN(exp)||skew===null)return;var ms=Math.max(0,exp-(Date.now()+skew)),s=Math.floor(ms/1000);
timer.textContent=String(Math.floor(s/60)).padStart(2,'0')+':'+String(s%60).padStart(2,'0')}
function later(ms){setTimeout(poll,ms)}
function poll(){fetch(url,{cache:'no-store',credentials:'omit'}).then(function(r){if(r.status===404)return;
if(!r.ok){var ra=parseInt(r.headers.get('Retry-After')||'',10)*1000;later(Math.min(Math.max(ra||0,2*every),10*every));return}
return r.json().then(function(j){var st=Date.parse(j.server_time);if(!isNaN(st))skew=st-Date.now();if(j.expires_at)exp=Date.parse(j.expires_at);tick();show(j.status);
if(!finals[j.status])later(every)})}).catch(function(){later(every)})}
if(!finals[shown]){setInterval(tick,1000);tick();poll()}
})();`;

const hashOf = (s: string) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;

/** The policy of every page answer: nothing but this origin, this style and this script. */
export const PAGE_CSP = [
  "default-src 'none'",
  `script-src ${hashOf(JS)}`,
  `style-src ${hashOf(CSS)}`,
  "connect-src 'self'",
  "img-src 'self' data:",
  "frame-ancestors 'none'",
  "form-action 'none'",
  "base-uri 'none'",
].join('; ');

/** A sandbox request's page: the same policy, but its outcome buttons may post to this origin. */
export const SANDBOX_PAGE_CSP = PAGE_CSP.replace("form-action 'none'", "form-action 'self'");

const esc = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function amountText(amount: string, currency: string, lang: Lang): string {
  // Intl formats a decimal string exactly (ES2023); a double would drop cents past 2^53.
  const exact = moneyOut(amount).text as unknown as number;
  const shown = new Intl.NumberFormat(lang === 'vi' ? 'vi-VN' : 'en-US', { maximumFractionDigits: 2 }).format(exact);
  return currency === 'VND' ? `${shown} ₫` : `${shown} ${currency}`;
}

function timeText(at: Date, lang: Lang, timeZone: string): string {
  return new Intl.DateTimeFormat(lang === 'vi' ? 'vi-VN' : 'en-GB', {
    timeZone,
    hour: '2-digit',
    minute: '2-digit',
    day: '2-digit',
    month: '2-digit',
    year: 'numeric',
    timeZoneName: 'short',
  }).format(at);
}

/** Notes up to this length fit on one line of a 320 px phone at the page's largest type (docs/payments.md, "The hosted checkout page"). */
const NOTE_FULL_SIZE_MAX = 14;

/**
 * The transfer note in groups of four, each never broken, on one line at a 360 px phone (a longer note in a smaller
 * type); a narrower screen breaks it between groups only. The groups are spaced by margins, not by characters, so a
 * selection copies the note as it is, like its copy button.
 */
function noteHtml(note: string): string {
  const groups = note.match(/.{1,4}/g) ?? [];
  const cls = note.length > NOTE_FULL_SIZE_MAX ? 'big note long' : 'big note';
  return `<p class="${cls}" id="content">${groups.map((g) => `<span>${esc(g)}</span>`).join('<wbr>')}</p>`;
}

const FINAL: readonly PaymentStatus[] = ['approved', 'expired', 'cancelled', 'rejected'];

export type PageInput = { p: PaymentRow; token: string; lang: Lang; timeZone: string; refreshSeconds: number };

/**
 * The page of one payment in one status and language. Its links are relative (the status URL, the language switch),
 * so that the page works under the path of public_base_url behind a proxy.
 */
export function renderPage({ p, token, lang, timeZone, refreshSeconds }: PageInput): string {
  const t = TEXT[lang];
  const status = p.status as PaymentStatus;
  const open = !FINAL.includes(status);
  const ready = p.qrContent !== null && (status === 'pending_payment' || status === 'payment_reported');
  const amount = amountText(p.amount, p.currency, lang);
  const copy = (text: string) => `<button type="button" data-copy="${esc(text)}" data-done="${esc(t.copied)}">${esc(t.copy)}</button>`;
  const back = p.returnUrl ? `<a class="back" href="${esc(p.returnUrl)}" rel="noreferrer noopener">${esc(t.back)}</a>` : '';
  const screen = (name: string, cls: string, title: string, text: string, extra = '') =>
    `<section class="card final ${cls}" data-screen="${name}"${status === name ? '' : ' hidden'}><h1>${esc(title)}</h1><p>${esc(text)}</p>${extra}</section>`;
  const pay = ready
    ? `<section class="card" id="screen-pay" data-screen="pay"${open ? '' : ' hidden'}>
<h1>${esc(t.title)}</h1>
<div class="grid"><div>
<div class="field"><p class="label">${esc(t.amount)}</p><div class="row"><p class="big" id="amount">${esc(amount)}</p>${copy(moneyOut(p.amount).text)}</div></div>
<div class="field"><p class="label">${esc(t.content)}</p><div class="row">${noteHtml(p.transferContent ?? '')}${copy(p.transferContent ?? '')}</div><p class="hint">${esc(t.contentHint)}</p></div>
<dl><dt>${esc(t.bank)}</dt><dd>${esc(p.bankName ?? '')}</dd>
<dt>${esc(t.account)}</dt><dd><span id="account">${esc(p.accountNumber ?? '')}</span> ${copy(p.accountNumber ?? '')}</dd>
<dt>${esc(t.accountName)}</dt><dd>${esc(p.accountName ?? '')}</dd></dl>
</div><div class="qr"><img src="${esc(p.qrImage ?? '')}" width="280" height="280" alt="${esc(t.qr)}"><p class="hint">${esc(t.qr)}</p></div></div>
<p class="status"><span id="waiting"${status === 'payment_reported' ? ' hidden' : ''}>${esc(t.waiting)}</span><span id="reported"${status === 'payment_reported' ? '' : ' hidden'}>${esc(t.reported)}</span><br>
${esc(t.expiresAt)} ${esc(p.expiresAt ? timeText(p.expiresAt, lang, timeZone) : '')} · ${esc(t.left)} <span class="timer" id="left">--:--</span></p>
</section>`
    : `<section class="card final" data-screen="preparing_payment"${status === 'preparing_payment' ? '' : ' hidden'}><h1>${esc(t.preparing)}</h1></section>`;
  return `<!doctype html>
<html lang="${lang}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex,nofollow">
<link rel="icon" href="data:,">
<title>${esc(t.title)}</title>
${open ? `<noscript><meta http-equiv="refresh" content="${refreshSeconds}"></noscript>` : ''}
<style>${CSS}</style></head>
<body data-status="${esc(status)}" data-status-url="${esc(token)}/status" data-refresh="${refreshSeconds}" data-expires="${esc(p.expiresAt?.toISOString() ?? '')}">
<main><p class="lang"><a href="?lang=${lang === 'vi' ? 'en' : 'vi'}">${esc(t.other)}</a></p>
${p.test ? sandboxPanel(token, lang, open) : ''}${pay}
${screen('approved', 'ok', t.approved, t.approvedText, `<p class="big">${esc(amount)}</p>${back}`)}
${screen('expired', 'bad', t.expired, t.expiredText)}
${screen('cancelled', 'bad', t.cancelled, t.cancelledText, back)}
${screen('rejected', 'bad', t.rejected, t.rejectedText)}
</main><script>${JS}</script></body></html>
`;
}

/** The one page of an unknown or malformed token: the same bytes whatever the token and the request. */
export const NOT_FOUND_PAGE = `<!doctype html>
<html lang="vi"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex,nofollow">
<link rel="icon" href="data:,">
<title>404</title>
<style>${CSS}</style></head>
<body><main><section class="card final bad"><h1>Không tìm thấy trang thanh toán</h1><p>Liên kết không đúng hoặc không còn tồn tại.</p>
<h1 lang="en">Payment page not found</h1><p lang="en">This link is wrong or no longer exists.</p></section></main></body></html>
`;

const TROUBLE = {
  vi: {
    busy: ['Quá nhiều yêu cầu', 'Trang này được mở quá nhiều lần trong một phút. Vui lòng đợi một chút.'],
    unavailable: ['Dịch vụ tạm thời gián đoạn', 'Chúng tôi không thể hiển thị trang thanh toán lúc này. Vui lòng thử lại sau ít phút.'],
    reload: (s: number) => `Trang sẽ tự tải lại sau ${s} giây.`,
    safe: 'Khoản thanh toán của bạn không bị ảnh hưởng. Nếu bạn đã chuyển khoản, đừng chuyển lại.',
  },
  en: {
    busy: ['Too many requests', 'This page was opened too many times in a minute. Please wait a moment.'],
    unavailable: ['Service temporarily unavailable', 'We cannot show the payment page right now. Please try again in a few minutes.'],
    reload: (s: number) => `This page reloads by itself in ${s} seconds.`,
    safe: 'Your payment is not affected. If you have already transferred the money, do not transfer it again.',
  },
} as const;

/**
 * The page a payer sees instead of the error envelope when the page cannot be shown: `busy` for a 429, `unavailable`
 * for a 5xx. With a Retry-After it reloads itself once that has passed (a meta refresh: the page has no script).
 */
export function troublePage(kind: 'busy' | 'unavailable', lang: Lang, retryAfterSeconds: number | null): string {
  const t = TROUBLE[lang];
  const [title, text] = t[kind];
  const reload = retryAfterSeconds !== null && retryAfterSeconds > 0 ? Math.min(retryAfterSeconds, 3600) : null;
  return `<!doctype html>
<html lang="${lang}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex,nofollow">
${reload === null ? '' : `<meta http-equiv="refresh" content="${reload}">\n`}<link rel="icon" href="data:,">
<title>${esc(title)}</title>
<style>${CSS}</style></head>
<body><main><p class="lang"><a href="?lang=${lang === 'vi' ? 'en' : 'vi'}">${esc(TEXT[lang].other)}</a></p>
<section class="card final bad"><h1>${esc(title)}</h1><p>${esc(text)}</p>${reload === null ? '' : `<p>${esc(t.reload(reload))}</p>`}<p class="hint">${esc(t.safe)}</p></section></main></body></html>
`;
}
