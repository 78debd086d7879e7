import type { Lang } from './checkout-page.js';
import { SIMULATED_OUTCOMES, type SimulatedOutcome } from './service.js';

/**
 * The checkout page of a sandbox request (docs/sandbox-payments.md): a "test mode" banner at the top and the
 * outcomes as buttons, plain forms that POST to `/pay/<token>/simulate` (no script needed), which the page's policy
 * allows for test requests only (form-action 'self'). A live request's token answers 404 there.
 */

const TEXT = {
  vi: {
    banner: 'CHẾ ĐỘ THỬ NGHIỆM: không có tiền thật nào được chuyển. Đừng chuyển khoản cho yêu cầu này.',
    choose: 'Giả lập kết quả:',
    approved: 'Thành công',
    rejected: 'Từ chối',
    expired: 'Hết hạn',
    cancelled: 'Huỷ',
  },
  en: {
    banner: 'TEST MODE: no real money moves. Do not transfer money for this request.',
    choose: 'Simulate an outcome:',
    approved: 'Approve',
    rejected: 'Reject',
    expired: 'Expire',
    cancelled: 'Cancel',
  },
} as const;

const esc = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The banner, and while the request is open the outcome buttons; the form's action is relative, as the page's links are. */
export function sandboxPanel(token: string, lang: Lang, open: boolean): string {
  const t = TEXT[lang];
  const buttons = SIMULATED_OUTCOMES.map(
    (o) =>
      `<form method="post" action="${esc(token)}/simulate?lang=${lang}"><input type="hidden" name="outcome" value="${o}"><button type="submit" name="do" value="${o}">${esc(t[o])}</button></form>`,
  ).join('');
  const sim = open ? `<div class="sim"><span>${esc(t.choose)}</span>${buttons}</div>` : '';
  return `<section class="card sandbox" id="sandbox"><p><strong>${esc(t.banner)}</strong></p>${sim}</section>`;
}

/** The outcome a form sent: `outcome=<one of the four>` as application/x-www-form-urlencoded, else null. */
export function outcomeOf(body: unknown): SimulatedOutcome | null {
  const o = typeof body === 'string' ? new URLSearchParams(body).get('outcome') : null;
  return (SIMULATED_OUTCOMES as readonly string[]).includes(o ?? '') ? (o as SimulatedOutcome) : null;
}
