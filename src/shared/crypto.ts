import { createCipheriv, createDecipheriv, createHmac, hash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

/** One-shot digest (Node >= 20.12): no Hash object per call, which matters on the per-request API key lookup. */
export function sha256Hex(input: string | Buffer): string {
  return hash('sha256', input, 'hex');
}

export function hmacSha256Hex(key: string | Buffer, data: string | Buffer): string {
  return createHmac('sha256', key).update(data).digest('hex');
}

/** Constant-time comparison of two strings; unequal lengths compare as false without leaking where they differ. */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}

export type Cipher = {
  /** AES-256-GCM; output is "v1:" + base64(iv | tag | ciphertext). */
  encrypt(plain: string): string;
  decrypt(box: string): string;
  /** Keyed HMAC-SHA256 (hex) for duplicate detection of short secrets such as codes: not guessable from the digest. */
  digest(plain: string): string;
};

/** The data-encryption key is derived from APP_SECRET with HKDF, so rotating the purpose label never reuses a key. */
export function createCipher(appSecret: string): Cipher {
  const key = Buffer.from(hkdfSync('sha256', appSecret, 'reseller-gateway', 'aes-256-gcm data key v1', 32));
  const digestKey = Buffer.from(hkdfSync('sha256', appSecret, 'reseller-gateway', 'hmac digest key v1', 32));
  return {
    digest(plain) {
      return hmacSha256Hex(digestKey, plain);
    },
    encrypt(plain) {
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', key, iv);
      const ct = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
      return `v1:${Buffer.concat([iv, c.getAuthTag(), ct]).toString('base64')}`;
    },
    decrypt(box) {
      if (!box.startsWith('v1:')) throw new Error('unknown ciphertext version');
      const raw = Buffer.from(box.slice(3), 'base64');
      const d = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      d.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8');
    },
  };
}
