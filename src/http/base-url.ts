import type { FastifyRequest } from 'fastify';
import type { SettingsService } from '../settings/service.js';

/** Base of links we hand out (download_url, checkout_url): the public_base_url setting, else the address the client called. */
export async function baseUrlOf(req: FastifyRequest, settings: SettingsService): Promise<string> {
  return (await settings.get('public_base_url')) || `${req.protocol}://${req.host}`;
}
