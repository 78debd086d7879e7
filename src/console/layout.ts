import { COMMON, type Lang, type Text } from './i18n.js';
import { CSS } from './styles.js';
import { Html, html, queryOf } from './html.js';

/** A nav entry: where it goes and its name. */
export type NavEntry = { href: string; name: Text };

/** What the layout needs of the request: language, where it is, the session's CSRF token (null when signed out). */
export type LayoutContext = { lang: Lang; path: string; csrf: string | null; nav: readonly NavEntry[] };

// A constant of this folder, inlined as it is: its bytes must match the hash in the policy (src/console/styles.ts).
const STYLE = new Html(CSS);

/** The link that shows this same page in the other language. */
function otherLanguage(c: LayoutContext): Html {
  const other = c.lang === 'vi' ? 'en' : 'vi';
  return html`<a href="${c.path}${queryOf({ lang: other })}" hreflang="${other}" lang="${other}">${COMMON.other[c.lang]}</a>`;
}

/** A hidden CSRF field for a form that changes something. */
export function csrfField(csrf: string | null): Html {
  return html`<input type="hidden" name="csrf" value="${csrf ?? ''}">`;
}

/** A whole page: the header with the nav and sign-out when signed in, a notice or a refusal, then the content. */
export function layout(c: LayoutContext, title: string, body: Html, o: { notice?: string; refusal?: string } = {}): Html {
  const signedIn = c.csrf !== null;
  const nav = signedIn
    ? html`<nav aria-label="console">${c.nav.map(
        (n) => html`<a href="${n.href}"${n.href === c.path ? html` aria-current="page"` : ''}>${n.name[c.lang]}</a>`,
      )}</nav>
<form method="post" action="/console/sign-out">${csrfField(c.csrf)}<button type="submit">${COMMON.signOut[c.lang]}</button></form>`
    : html`<span class="muted"></span>`;
  return html`<!doctype html>
<html lang="${c.lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><link rel="icon" href="data:,"><title>${title} · ${COMMON.title[c.lang]}</title><style>${STYLE}</style></head>
<body><header><a class="brand" href="/console">${COMMON.title[c.lang]}</a>${nav}${otherLanguage(c)}</header>
<main>${o.notice ? html`<p class="notice" role="status">${o.notice}</p>` : ''}${o.refusal ? html`<p class="refusal" role="alert">${o.refusal}</p>` : ''}
<h1>${title}</h1>
${body}</main></body></html>`;
}

/** The sign-in page: the one form a visitor without a session sees. */
export function signInPage(c: LayoutContext, refusal?: string): Html {
  const t = (x: Text) => x[c.lang];
  return layout(
    { ...c, csrf: null },
    t(COMMON.signIn),
    html`<form class="card signin" method="post" action="/console/sign-in">
<label>${t(COMMON.token)}<input type="password" name="token" autocomplete="current-password" required maxlength="512"></label>
<p><button type="submit">${t(COMMON.signIn)}</button></p></form>`,
    { refusal },
  );
}
