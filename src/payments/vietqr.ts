import { qrPng } from './qr-png.js';

/** CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final xor), as EMVCo QR requires. */
export function crc16CcittFalse(input: string): string {
  let crc = 0xffff;
  for (const byte of Buffer.from(input, 'utf8')) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc.toString(16).toUpperCase().padStart(4, '0');
}

/** One EMVCo TLV field: 2-digit id, 2-digit length, value. */
function tlv(id: string, value: string): string {
  const len = Buffer.byteLength(value, 'utf8');
  if (len > 99) throw new Error(`EMVCo field ${id} is longer than 99 bytes`);
  return `${id}${String(len).padStart(2, '0')}${value}`;
}

export type VietQrInput = { bankBin: string; accountNumber: string; amount: string; transferContent: string };

/** NAPAS VietQR GUID and the service code of a transfer to an account number. */
const VIETQR_GUID = 'A000000727';
const SERVICE_TRANSFER_TO_ACCOUNT = 'QRIBFTTA';

/**
 * The VietQR (EMVCo merchant-presented) payload of a bank transfer with a fixed amount and transfer note:
 * dynamic QR (01=12), beneficiary bank BIN and account under id 38, currency 704 (VND), amount, country VN, the
 * transfer content as purpose (62/08), and the CRC over everything up to and including "6304".
 */
export function vietQrPayload(p: VietQrInput): string {
  const beneficiary = tlv('00', p.bankBin) + tlv('01', p.accountNumber);
  const merchantAccount = tlv('00', VIETQR_GUID) + tlv('01', beneficiary) + tlv('02', SERVICE_TRANSFER_TO_ACCOUNT);
  const body =
    tlv('00', '01') +
    tlv('01', '12') +
    tlv('38', merchantAccount) +
    tlv('53', '704') +
    tlv('54', p.amount) +
    tlv('58', 'VN') +
    tlv('62', tlv('08', p.transferContent)) +
    '6304';
  return body + crc16CcittFalse(body);
}

/** Parses a TLV string into its top-level fields (for checks and tests). */
export function parseTlv(payload: string): Map<string, string> {
  const out = new Map<string, string>();
  let i = 0;
  while (i < payload.length) {
    const id = payload.slice(i, i + 2);
    const len = Number(payload.slice(i + 2, i + 4));
    if (!/^\d{2}$/.test(id) || !Number.isInteger(len)) throw new Error(`bad TLV at ${i}`);
    out.set(id, payload.slice(i + 4, i + 4 + len));
    i += 4 + len;
  }
  return out;
}

/** PNG data URL of the QR code of `payload` (1 bit per pixel, written from the QR matrix: payments/qr-png.ts). */
export function qrPngDataUrl(payload: string): string {
  return `data:image/png;base64,${qrPng(payload, { errorCorrectionLevel: 'M', margin: 2, scale: 6 }).toString('base64')}`;
}
