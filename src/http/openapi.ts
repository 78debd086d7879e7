/**
 * What the zod schemas cannot say in OpenAPI 3: request bodies of the upload routes (multipart/text, read as streams,
 * not validated as JSON) and the ZIP answer of order-download. Error answers stay JSON envelopes.
 */
export function patchOpenApi<T>(doc: T): T {
  const paths = (doc as { paths?: Record<string, Record<string, Record<string, unknown>>> }).paths ?? {};
  const fileBody = {
    required: true,
    content: {
      'multipart/form-data': { schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary' } } } },
    },
  };
  const codes = paths['/admin/v1/products/{id}/codes']?.post;
  if (codes) {
    codes.requestBody = {
      required: true,
      description: 'one code a line',
      content: { ...fileBody.content, 'text/plain': { schema: { type: 'string' } } },
    };
  }
  const files = paths['/admin/v1/products/{id}/files']?.post;
  if (files) files.requestBody = fileBody;
  const download = paths['/api/v1/order-download']?.get as { responses?: Record<string, unknown> } | undefined;
  if (download?.responses) {
    download.responses['200'] = { description: 'the ZIP file, streamed', content: { 'application/zip': { schema: { type: 'string', format: 'binary' } } } };
  }
  return doc;
}
