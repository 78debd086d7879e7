import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { uploadedFile, type UploadedFile } from '../admin/upload.js';
import { guardedMessage } from '../http/guard.js';
import { safeEqual } from '../shared/crypto.js';
import { createIpMatcher } from '../shared/ip.js';
import { parseWith, refusalOf, runAction } from './action.js';
import { CONSOLE_HEADERS } from './styles.js';
import { COMMON, pickLang, type Lang, type Text } from './i18n.js';
import { layout, signInPage, type LayoutContext, type NavEntry } from './layout.js';
import type { ConsoleDeps, Ctx, Handler, PageAnswer } from './page.js';
import { PAGES } from './pages/index.js';
import { readCookies, sessionCookie, langCookie, SESSION_COOKIE, LANG_COOKIE } from './cookies.js';
import { html } from './html.js';

/** Form bodies taken by the console: a setting's value or a list of addresses fits many times over. */
export const CONSOLE_FORM_LIMIT = 64 * 1024;

const strings = (o: unknown): Record<string, string> =>
  Object.fromEntries(Object.entries((o ?? {}) as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string'));

/**
 * The admin console (docs/console.md): server-rendered pages under /console for ADMIN_ALLOWED_IPS only, a session
 * after sign-in with ADMIN_TOKEN, a CSRF token on every form that changes something, no script, a strict policy.
 * Each page is a module of src/console/pages/ listed in pages/index.ts; its actions call the admin API's services.
 */
export async function consoleRoutes(app: FastifyInstance, deps: ConsoleDeps): Promise<void> {
  const allowed = createIpMatcher(deps.allowedIps);
  const nav: NavEntry[] = PAGES.map((p) => ({ href: p.href, name: p.name }));
  // What the error handler needs to draw its page like the others (the language, the session's nav).
  const seen = new WeakMap<FastifyRequest, LayoutContext>();

  // The forms of the console are form-encoded, bounded; any other body (JSON, text, multipart) is refused 415 here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: CONSOLE_FORM_LIMIT },
    (_req, body, done) => {
      const form: Record<string, string> = {};
      for (const [k, v] of new URLSearchParams(body as string)) form[k] = v;
      done(null, form);
    },
  );
  // Upload forms (multipart) are read as a stream by their route alone (router.upload); any other route finds no
  // `csrf` in such a body and refuses it.
  await app.register(multipart, { limits: { fileSize: deps.uploadMaxBytes, files: 1, fields: 10 } });

  function langOf(req: FastifyRequest, reply: FastifyReply): Lang {
    const asked = (req.query as Record<string, unknown> | undefined)?.lang;
    if (asked === 'vi' || asked === 'en') reply.header('Set-Cookie', langCookie(asked, req.protocol === 'https'));
    return pickLang(asked ?? readCookies(req)[LANG_COOKIE], req.headers['accept-language']);
  }
  const pathOf = (req: FastifyRequest) => req.url.split('?')[0]!;
  const send = (reply: FastifyReply, status: number, page: { text: string }) =>
    reply.code(status).type('text/html; charset=utf-8').send(page.text);

  app.addHook('onRequest', async (req, reply) => {
    for (const [name, value] of Object.entries(CONSOLE_HEADERS)) reply.header(name, value);
    if (allowed.allows(req.ip)) return;
    const lang = pickLang((req.query as Record<string, unknown> | undefined)?.lang, req.headers['accept-language']);
    const c = { lang, path: pathOf(req), csrf: null, nav };
    return send(reply, 403, layout(c, COMMON.forbidden[lang], html`<p>${COMMON.forbidden[lang]}: ${req.ip} (ADMIN_ALLOWED_IPS).</p>`));
  });

  app.setErrorHandler((err, req, reply) => {
    const c = seen.get(req) ?? { lang: 'vi' as Lang, path: pathOf(req), csrf: null, nav };
    const fe = err as { code?: string; statusCode?: number };
    const refusal =
      refusalOf(err) ??
      (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
        ? { status: 413, message: 'Request body is too large' }
        : typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500
          ? { status: fe.statusCode, message: (err as Error).message || 'Bad request' }
          : null);
    if (!refusal) req.log.error({ err }, 'unhandled error');
    const status = refusal?.status ?? 500;
    const message = refusal?.message ?? `${COMMON.error[c.lang]}: ${req.id}`;
    if (status >= 500 && refusal) req.log.error({ err: { message } }, 'request failed');
    return send(reply, status, layout(c, COMMON.refused[c.lang], html``, { refusal: message }));
  });

  async function sessionOf(req: FastifyRequest) {
    const id = readCookies(req)[SESSION_COOKIE];
    return id ? deps.sessions.touch(id) : null;
  }

  function serve(method: 'GET' | 'POST', handler: Handler, upload?: { maxBytes: number }) {
    return async (req: FastifyRequest, reply: FastifyReply) => {
      const lang = langOf(req, reply);
      const path = pathOf(req);
      const session = await sessionOf(req);
      if (!session) {
        // A cookie that names no live session: the sign-in form says the session ended (idle, or signed out elsewhere).
        const ended = readCookies(req)[SESSION_COOKIE] ? '?ended=1' : '';
        if (method === 'GET') return reply.redirect(`/console/sign-in${ended}`, 303);
        return send(reply, 401, signInPage({ lang, path: '/console/sign-in', csrf: null, nav }, COMMON.expired[lang]));
      }
      // The layout's links (nav, the other language) go to pages: a form's own address answers only its POST.
      const c: LayoutContext = { lang, path: method === 'GET' ? path : '/console', csrf: session.csrf, nav };
      seen.set(req, c);
      let form = method === 'POST' ? strings(req.body) : {};
      // An upload's fields come before its file in the form: its CSRF token is checked before the file is used.
      let file: UploadedFile | null = null;
      if (upload && req.isMultipart()) {
        file = await uploadedFile(req, { fileSize: upload.maxBytes });
        form = file.fields;
      }
      if (method === 'POST' && !safeEqual(form.csrf ?? '', session.csrf)) {
        file?.stream.resume();
        return send(reply, 403, layout(c, COMMON.refused[lang], html``, { refusal: COMMON.badCsrf[lang] }));
      }
      const ctx: Ctx = {
        req,
        lang,
        t: (x: Text) => x[lang],
        path,
        params: strings(req.params),
        query: strings(req.query),
        form,
        file,
        csrf: session.csrf,
        timeZone: await deps.settings.get('display_timezone'),
        action: (operationId, r, fn) => runAction(deps.db, req, operationId, r, fn),
        parse: parseWith,
      };
      const answer: PageAnswer = await handler(ctx);
      if ('redirect' in answer) return reply.redirect(answer.redirect, 303);
      return send(reply, answer.status ?? 200, layout({ ...c, path: answer.at ?? c.path }, answer.title, answer.body, answer));
    };
  }

  app.get('/console/sign-in', { schema: { hide: true } }, async (req, reply) => {
    const lang = langOf(req, reply);
    if (await sessionOf(req)) return reply.redirect('/console', 303);
    const ended = (req.query as Record<string, unknown> | undefined)?.ended === '1';
    return send(reply, 200, signInPage({ lang, path: '/console/sign-in', csrf: null, nav }, ended ? COMMON.expired[lang] : undefined));
  });
  app.post('/console/sign-in', { schema: { hide: true } }, async (req, reply) => {
    const lang = langOf(req, reply);
    const c = { lang, path: '/console/sign-in', csrf: null, nav };
    // Wrong tokens count against the address in the guard the ordering API and the cron endpoint feed (src/http/guard.ts).
    const wait = await deps.guard.retryAfter(`ip:${req.ip}`);
    if (wait !== null)
      return send(reply.header('Retry-After', String(wait)), 429, signInPage(c, guardedMessage('repeated wrong tokens', wait)));
    const token = strings(req.body).token ?? '';
    if (!safeEqual(token, deps.adminToken)) {
      await deps.guard.authFailure(req.ip);
      return send(reply, 401, signInPage(c, COMMON.wrongToken[lang]));
    }
    const created = await runAction(deps.db, req, 'console.sign_in', {}, () => deps.sessions.create());
    if (!created.ok) throw new Error(created.message);
    return reply.header('Set-Cookie', sessionCookie(created.value.id, req.protocol === 'https')).redirect('/console', 303);
  });
  app.post('/console/sign-out', { schema: { hide: true } }, async (req, reply) => {
    const lang = langOf(req, reply);
    const session = await sessionOf(req);
    if (!session) return send(reply, 401, signInPage({ lang, path: '/console/sign-in', csrf: null, nav }, COMMON.expired[lang]));
    if (!safeEqual(strings(req.body).csrf ?? '', session.csrf)) {
      const c = { lang, path: '/console', csrf: session.csrf, nav };
      return send(reply, 403, layout(c, COMMON.refused[lang], html``, { refusal: COMMON.badCsrf[lang] }));
    }
    await runAction(deps.db, req, 'console.sign_out', {}, () => deps.sessions.end(session.digest));
    return reply.header('Set-Cookie', sessionCookie('', req.protocol === 'https')).redirect('/console/sign-in', 303);
  });

  const router = {
    get: (path: string, handler: Handler) => app.get(path, { schema: { hide: true } }, serve('GET', handler)),
    post: (path: string, handler: Handler) => app.post(path, { schema: { hide: true } }, serve('POST', handler)),
    upload: (path: string, handler: Handler, o: { maxBytes: number }) =>
      app.post(path, { schema: { hide: true } }, serve('POST', handler, o)),
  };
  for (const page of PAGES) page.register(router, deps);
}
