import { PassThrough, type Readable } from 'node:stream';
import type { MultipartFile } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../http/errors.js';

export type UploadedFile = { filename: string; stream: Readable & { truncated?: boolean } };

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

  let r = await first;
  while (!r.done && r.value.type !== 'file') r = await parts.next();
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
  return { filename: part.filename, stream: out };
}
