import { pickLang, type Lang } from '../payments/checkout-page.js';

export { pickLang, type Lang };

/** A text in both languages; each page keeps its own texts beside its markup. */
export type Text = { vi: string; en: string };

/** The shared words of every page (layout, forms, paging). */
export const COMMON = {
  title: { vi: 'Bảng quản trị', en: 'Admin console' },
  signIn: { vi: 'Đăng nhập', en: 'Sign in' },
  signOut: { vi: 'Đăng xuất', en: 'Sign out' },
  token: { vi: 'Mã quản trị (ADMIN_TOKEN)', en: 'Admin token (ADMIN_TOKEN)' },
  wrongToken: { vi: 'Mã quản trị không đúng.', en: 'Wrong admin token.' },
  expired: {
    vi: 'Phiên đã hết hạn hoặc chưa đăng nhập; hãy đăng nhập lại.',
    en: 'Your session has ended or you are not signed in; sign in again.',
  },
  badCsrf: {
    vi: 'Biểu mẫu thiếu hoặc sai mã CSRF; không có gì thay đổi. Hãy tải lại trang và thử lại.',
    en: 'The form lacks a valid CSRF token; nothing was changed. Reload the page and try again.',
  },
  forbidden: { vi: 'Bảng quản trị không phục vụ địa chỉ này', en: 'The admin console is not served to this address' },
  guarded: { vi: 'Quá nhiều lần đăng nhập sai; thử lại sau', en: 'Too many wrong sign-ins; try again in' },
  seconds: { vi: 'giây', en: 's' },
  refused: { vi: 'Bị từ chối', en: 'Refused' },
  done: { vi: 'Đã xong', en: 'Done' },
  next: { vi: 'Trang sau', en: 'Next page' },
  first: { vi: 'Trang đầu', en: 'First page' },
  filter: { vi: 'Lọc', en: 'Filter' },
  save: { vi: 'Lưu', en: 'Save' },
  none: { vi: 'Không có gì.', en: 'Nothing here.' },
  notFound: { vi: 'Không có trang này.', en: 'No such page.' },
  error: { vi: 'Lỗi máy chủ; hãy báo mã yêu cầu', en: 'Server error; quote the request id' },
  other: { vi: 'English', en: 'Tiếng Việt' },
} satisfies Record<string, Text>;

/** Number and date formatting in the page's language. */
export function locale(lang: Lang): string {
  return lang === 'vi' ? 'vi-VN' : 'en-GB';
}

/** A time shown in the shop's display time zone, to the second. */
export function timeText(at: Date | string | null | undefined, lang: Lang, timeZone: string): string {
  if (at === null || at === undefined || at === '') return '';
  const d = typeof at === 'string' ? new Date(at) : at;
  return new Intl.DateTimeFormat(locale(lang), { timeZone, dateStyle: 'short', timeStyle: 'medium' }).format(d);
}

/** An amount (decimal text, or a JsonDecimal's text) in the page's language: Intl formats a decimal string exactly. */
export function moneyText(amount: { toString(): string } | string, lang: Lang): string {
  const text = String(amount);
  if (!/^-?\d+(\.\d+)?$/.test(text)) return text;
  return new Intl.NumberFormat(locale(lang), { maximumFractionDigits: 2 }).format(text as unknown as number);
}

/** A count in the page's language. */
export function countText(n: number, lang: Lang): string {
  return new Intl.NumberFormat(locale(lang)).format(n);
}
