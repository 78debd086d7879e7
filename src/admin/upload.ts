import readline from 'node:readline';
import { PassThrough, type Readable } from 'node:stream';
import multipart, { type MultipartFile } from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../http/errors.js';

/** The file of a form, and the plain fields sent before it (a form's hidden fields precede its file input). */
export type UploadedFile = { filename: string; stream: Readable & { truncated?: boolean }; fields: Record<string, string> };

type Limits = { fileSize?: number };

function asUploadError(err: unknown): Error {
  const status = (err as { statusCode?: number }).statusCode;
  if (err instanceof AppError || (typeof status === 'number' && status >= 400 && status < 500)) return err as Error;
  // busboy's own errors ("Part terminated early ...") are the client's malformed form, not our failure.
  return new AppError('invalid_request', 'Malformed multipart body: the form is cut short or does not follow multipart/form-data');
}

/**
 * The multipart field `file` as a stream that settles whatever the client does: it ends only once the whole form was
 * read and found well-formed (closing boundary present, no limit hit after the file), and it fails with a 4xx when the
 * form is cut short, breaks a limit or the client goes away. busboy alone may end a truncated part quietly (it reports
 * the cut on the part before our code can listen) or stop feeding it for ever after a limit, which held an import's
 * transaction open and left `.part` files behind.
 */
export async function uploadedFile(req: FastifyRequest, limits: Limits = {}): Promise<UploadedFile> {
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(req.headers['content-type'] ?? '');
  const closing = `--${m?.[1] ?? m?.[2] ?? ''}--`;
  const out = new PassThrough() as PassThrough & { truncated?: boolean };
  // Consumers may fail before they read (unknown product); the failure must not become an unhandled 'error'.
  out.on('error', () => {});
  let failed = false;
  let file: Readable | null = null;
  const fail = (err: unknown) => {
    if (failed) return;
    failed = true;
    out.destroy(asUploadError(err));
    file?.resume();
  };

  const parts = req.parts({ limits });
  // The first next() pipes the request into the parser; watching the raw body from here on sees every byte of it.
  const first = parts.next();
  let tail = '';
  let bodyComplete: boolean | null = null;
  let fileEnded = false;
  const maybeEnd = () => {
    if (!failed && fileEnded && bodyComplete === true) out.end();
  };
  const keep = closing.length + 8;
  req.raw.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.subarray(Math.max(0, chunk.length - keep)).toString('latin1')).slice(-keep);
  });
  req.raw.once('end', () => {
    bodyComplete = tail.includes(closing);
    if (!bodyComplete) fail(new AppError('invalid_request', 'Malformed multipart body: the closing boundary is missing'));
    else maybeEnd();
  });
  req.raw.once('close', () => {
    if (bodyComplete === null) fail(new AppError('invalid_request', 'The upload was interrupted before its end'));
  });

  const fields: Record<string, string> = {};
  let r = await first;
  while (!r.done && r.value.type !== 'file') {
    if (typeof r.value.value === 'string') fields[r.value.fieldname] = r.value.value;
    r = await parts.next();
  }
  if (r.done) throw new AppError('invalid_request', 'Send the upload as the multipart field `file`');
  const part = r.value as MultipartFile;
  const stream = part.file;
  file = stream;
  stream.on('error', fail);
  stream.on('end', () => {
    fileEnded = true;
    out.truncated = stream.truncated;
    maybeEnd();
  });
  stream.pipe(out, { end: false });
  // The rest of the form runs alongside: a later part is drained, a limit or a parse error fails the file.
  void (async () => {
    for (let next = await parts.next(); !next.done; next = await parts.next()) {
      if (next.value.type === 'file') next.value.file.resume();
    }
  })().catch(fail);
  return { filename: part.filename, stream: out, fields };
}

/** Passes a stream through, failing it with payload_too_large past `max` bytes (the body limit does not apply to streams). */
function limitBytes(input: Readable, max: number): Readable {
  let seen = 0;
  const out = new PassThrough();
  // The importer may refuse before reading (unknown product): an error then has no reader and must not crash us.
  out.on('error', () => {});
  input.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > max && !out.destroyed) {
      // Drain and drop the rest rather than destroying the request: the 413 answer still has a socket to go out on.
      input.unpipe(out);
      input.resume();
      out.destroy(new AppError('payload_too_large', `Upload is larger than ${max} bytes`));
    }
  });
  input.on('error', (err) => out.destroy(err));
  input.pipe(out);
  return out;
}

/** Lines of an upload; readline starts when iteration starts, since lines it emits before that would be lost. */
export function linesOf(stream: Readable, maxBytes: number): AsyncIterable<string> {
  return {
    async *[Symbol.asyncIterator]() {
      // A stream that already failed (over the size limit while the transaction was opening) never ends by itself.
      if (stream.errored) throw stream.errored;
      let failure: Error | null = null;
      const rl = readline.createInterface({ input: stream, crlfDelay: Infinity });
      const onError = (err: Error) => {
        failure = err;
        rl.close();
      };
      stream.once('error', onError);
      try {
        for await (const line of rl) {
          if (failure) break;
          yield line;
        }
      } finally {
        stream.off('error', onError);
      }
      if (failure) throw failure;
      // @fastify/multipart ends an oversized file quietly and only flags it: refuse, so the import rolls back whole
      // instead of stocking a cut-off last code.
      if ((stream as Readable & { truncated?: boolean }).truncated)
        throw new AppError('payload_too_large', `Upload is larger than ${maxBytes} bytes`);
    },
  };
}

/**
 * Makes `uploads` (the admin scope of the upload routes) parse multipart forms and plain-text code lists, both
 * streamed and bounded by `maxBytes`. Only that scope parses them, so a JSON route sent text/plain answers 415.
 */
export async function installUploadParsers(uploads: FastifyInstance, maxBytes: number): Promise<void> {
  await uploads.register(multipart, { limits: { fileSize: maxBytes, files: 1, fields: 10 } });
  // Code lists may also be sent as a plain text body (one code a line), streamed as well.
  uploads.addContentTypeParser('text/plain', (_req, payload, done) => done(null, limitBytes(payload, maxBytes)));
}

/** The lines of a code list sent as multipart field `file` or as a text/plain body. */
export async function uploadedLines(req: FastifyRequest, maxBytes: number): Promise<AsyncIterable<string>> {
  if (req.isMultipart()) return linesOf((await uploadedFile(req)).stream, maxBytes);
  if (req.body && typeof (req.body as Readable).pipe === 'function') return linesOf(req.body as Readable, maxBytes);
  throw new AppError('unsupported_media_type', 'Send the code list as multipart/form-data (field `file`) or text/plain');
}
