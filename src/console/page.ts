import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { AdminDeps } from '../admin/routes.js';
import type { UploadedFile } from '../admin/upload.js';
import type { Guard } from '../http/guard.js';
import type { FactsSource } from '../ops/facts.js';
import type { Clock } from '../shared/clock.js';
import type { Html } from './html.js';
import type { Lang, Text } from './i18n.js';
import type { ConsoleSessions } from './sessions.js';

/** Every service the admin API has, plus what the console's own parts need. */
export type ConsoleDeps = AdminDeps & { guard: Guard; clock: Clock; facts: FactsSource; sessions: ConsoleSessions };

/** A page to show (inside the layout) or a 303 to follow (Post/Redirect/Get after a change). */
export type PageAnswer =
  | {
      title: string;
      body: Html;
      status?: number;
      notice?: string;
      refusal?: string;
      /** The page's own address when it answers a form posted elsewhere (nav and language links point there). */
      at?: string;
    }
  | { redirect: string };

/** How an action ended: its value, or the refusal of the service with the status the admin API answers it with. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; status: number; message: string };

/** What the admin API's audit spec reads of a request (src/admin/audit-actions.ts): the same fields, by name. */
export type ActionRequest = { params?: Record<string, string>; query?: Record<string, unknown>; body?: Record<string, unknown> };

/** One request as a page handler sees it. */
export type Ctx = {
  req: FastifyRequest;
  lang: Lang;
  t(x: Text): string;
  /** The request's path, without its query. */
  path: string;
  params: Record<string, string>;
  /** The query's string values (repeated names: the last). */
  query: Record<string, string>;
  /** The form's fields (POST); empty for GET. */
  form: Record<string, string>;
  /** An upload route's file (multipart field `file`), its CSRF token already checked; read it or resume it. */
  file: UploadedFile | null;
  /** The session's CSRF token, for the forms of the page (csrfField). */
  csrf: string;
  /** display_timezone. */
  timeZone: string;
  /**
   * Runs an admin action as the admin API route `operationId` would: in an audit scope with actor `console`, its
   * action, target and summary from that route's audit spec. A DomainError or AppError becomes a refusal with the
   * API's message and status; anything else is thrown (a 500 page).
   */
  action<T>(operationId: string, r: ActionRequest, fn: () => Promise<T>): Promise<Outcome<T>>;
  /** Parses form input with the admin API's own schema, so a refusal reads as the API's (`Invalid body: ...`). */
  parse<S extends z.ZodType>(schema: S, input: unknown, where?: 'body' | 'querystring' | 'params'): Outcome<z.output<S>>;
};

export type Handler = (ctx: Ctx) => Promise<PageAnswer>;

/** Routes of a page, all behind the session; `post` routes are refused 403 without the session's CSRF token. */
export type ConsoleRouter = {
  get(path: string, handler: Handler): void;
  post(path: string, handler: Handler): void;
  /** A form with a file (multipart), read as a stream of at most `maxBytes` (past it the stream says `truncated`). */
  upload(path: string, handler: Handler, o: { maxBytes: number }): void;
};

/** One page of the console: its nav entry and its routes (src/console/pages/index.ts lists them). */
export type ConsolePage = { href: string; name: Text; register(r: ConsoleRouter, deps: ConsoleDeps): void };
