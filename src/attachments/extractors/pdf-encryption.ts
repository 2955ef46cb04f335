import { createCipheriv, createDecipheriv, createHash } from 'node:crypto';
import { PdfDict, PdfName, PdfString, PdfValue } from './pdf-syntax';

/**
 * The Standard security handler of PDF, as PDF.js 5 applies it when a file is opened without a
 * password (src/core/crypto.js, CipherTransformFactory): the key is derived from the empty user
 * password, and a file whose /U entry does not accept it is not opened at all (PDF.js asks for a
 * password, and extraction fails). Used by pdf-stream-guard.ts to read encrypted streams, which
 * PDF.js decrypts and then decodes like any other: without this, encrypting a bomb would hide it.
 *
 * RC4 (V 1, 2, and V 4 crypt filters with /CFM /V2), AES-128 (/AESV2) and AES-256 (V 5, revisions
 * 5 and 6, /AESV3) are covered: every method PDF.js supports.
 */

/** Decrypts the data of the stream object `num gen`, or null when its method does not encrypt streams. */
export type StreamDecryptor = (data: Buffer, num: number, gen: number) => Buffer;

// PDF.js's CipherTransformFactory._defaultPasswordBytes: the padding of algorithm 2.
const PASSWORD_PADDING = Buffer.from([
  0x28, 0xbf, 0x4e, 0x5e, 0x4e, 0x75, 0x8a, 0x41, 0x64, 0x00, 0x4e, 0x56, 0xff, 0xfa, 0x01, 0x08, 0x2e, 0x2e, 0x00, 0xb6, 0xd0, 0x68, 0x3e, 0x80, 0x2f, 0x0c,
  0xa9, 0xfe, 0x64, 0x53, 0x69, 0x7a,
]);

/**
 * The stream decryptor of an /Encrypt dictionary and the file's first /ID string, as PDF.js would
 * set it up with no password; null when PDF.js would not open the file (another handler, an
 * unsupported version, a key length it refuses, or a user password that is not empty).
 */
export function standardDecryptor(
  dict: PdfDict,
  fileId: string,
  /** Follows an indirect reference (PDF.js's Dict.get does at every level). */
  resolve: (value: PdfValue | undefined) => PdfValue | undefined,
): StreamDecryptor | null {
  const entry = (from: PdfValue | undefined, key: string) => (from instanceof PdfDict ? resolve(from.get(key)) : undefined);
  const encrypt = { get: (key: string) => entry(dict, key) };
  const filter = encrypt.get('Filter');
  if (!(filter instanceof PdfName) || filter.name !== 'Standard') return null;
  const version = encrypt.get('V');
  if (version !== 1 && version !== 2 && version !== 4 && version !== 5) return null;
  const cf = encrypt.get('CF');
  const stmf = encrypt.get('StmF');
  let keyBits = encrypt.get('Length');
  if (!keyBits) {
    if (version <= 3) keyBits = 40;
    else {
      keyBits = entry(stmf instanceof PdfName ? entry(cf, stmf.name) : undefined, 'Length') || 128;
      if (typeof keyBits === 'number' && keyBits < 40) keyBits <<= 3;
    }
  }
  if (typeof keyBits !== 'number' || !Number.isInteger(keyBits) || keyBits < 40 || keyBits % 8 !== 0) return null;
  const owner = bytesOf(encrypt.get('O'));
  const user = bytesOf(encrypt.get('U'));
  const revision = encrypt.get('R');
  const permissions = encrypt.get('P');
  const encryptMetadata = (version === 4 || version === 5) && encrypt.get('EncryptMetadata') !== false;
  let key: Buffer | null;
  if (version !== 5) {
    key = rc4Key(Buffer.from(fileId, 'latin1'), owner.subarray(0, 32), user.subarray(0, 32), Number(permissions), Number(revision), keyBits, encryptMetadata);
  } else {
    key = aes256Key(revision === 6, user, bytesOf(encrypt.get('UE')));
  }
  if (!key) return null;
  if (version === 4 && key.length < 16) key = Buffer.concat([key, Buffer.alloc(16 - key.length)]);
  const fileKey = key;
  if (version !== 4 && version !== 5) return (data, num, gen) => rc4(objectKey(fileKey, num, gen, false), data);
  const cfm = entry(entry(cf, stmf instanceof PdfName ? stmf.name : 'Identity'), 'CFM');
  switch (cfm instanceof PdfName ? cfm.name : 'None') {
    case 'V2':
      return (data, num, gen) => rc4(objectKey(fileKey, num, gen, false), data);
    case 'AESV2':
      return (data, num, gen) => aesDecrypt('aes-128-cbc', objectKey(fileKey, num, gen, true), data);
    case 'AESV3':
      return (data) => aesDecrypt('aes-256-cbc', fileKey, data);
    case 'None':
      return (data) => data;
    default:
      return null; // PDF.js throws "Unknown crypto method" when it reads a stream
  }
}

/** Algorithm 2 (revisions 2–4) with the empty password, checked against /U as PDF.js checks it. */
function rc4Key(fileId: Buffer, owner: Buffer, user: Buffer, permissions: number, revision: number, keyBits: number, encryptMetadata: boolean): Buffer | null {
  const p = Buffer.from([permissions & 0xff, (permissions >> 8) & 0xff, (permissions >> 16) & 0xff, (permissions >>> 24) & 0xff]);
  const parts = [PASSWORD_PADDING, owner, p, fileId];
  if (revision >= 4 && !encryptMetadata) parts.push(Buffer.from([0xff, 0xff, 0xff, 0xff]));
  let hash = md5(Buffer.concat(parts));
  const length = keyBits >> 3;
  if (revision >= 3) for (let i = 0; i < 50; i++) hash = md5(hash.subarray(0, length));
  const key = hash.subarray(0, length);
  let check: Buffer;
  if (revision >= 3) {
    check = rc4(key, md5(Buffer.concat([PASSWORD_PADDING, fileId])));
    for (let i = 1; i <= 19; i++) check = rc4(Buffer.from(key.map((b) => b ^ i)), check);
  } else {
    check = rc4(key, PASSWORD_PADDING);
  }
  return check.every((b, i) => user[i] === b) ? key : null;
}

/** Revisions 5 and 6 with the empty password: /U's validation salt checks it, its key salt unwraps /UE. */
function aes256Key(revision6: boolean, user: Buffer, userEncrypted: Buffer): Buffer | null {
  const hash = (input: Buffer) => (revision6 ? hash2B(input) : createHash('sha256').update(input).digest());
  if (!hash(user.subarray(32, 40)).equals(user.subarray(0, 32))) return null;
  const intermediate = hash(user.subarray(40, 48));
  if (userEncrypted.length < 32) return null;
  const decipher = createDecipheriv('aes-256-cbc', intermediate, Buffer.alloc(16)).setAutoPadding(false);
  return decipher.update(userEncrypted.subarray(0, 32));
}

/** Algorithm 2.B of ISO 32000-2 (PDF.js's PDF20._hash) for the empty password and no user data. */
function hash2B(input: Buffer): Buffer {
  let k = createHash('sha256').update(input).digest().subarray(0, 32);
  let e = Buffer.alloc(1);
  for (let round = 0; round < 64 || e[e.length - 1] > round - 32; round++) {
    const k1 = Buffer.concat(Array.from({ length: 64 }, () => k));
    const cipher = createCipheriv('aes-128-cbc', k.subarray(0, 16), k.subarray(16, 32)).setAutoPadding(false);
    e = Buffer.concat([cipher.update(k1), cipher.final()]);
    let sum = 0;
    for (let i = 0; i < 16; i++) sum += e[i];
    k = createHash(['sha256', 'sha384', 'sha512'][sum % 3])
      .update(e)
      .digest();
  }
  return k.subarray(0, 32);
}

/** The key of one object (algorithm 1): file key, object number and generation, and `sAlT` for AES. */
function objectKey(key: Buffer, num: number, gen: number, aes: boolean): Buffer {
  const suffix = [num & 0xff, (num >> 8) & 0xff, (num >> 16) & 0xff, gen & 0xff, (gen >> 8) & 0xff];
  const hash = md5(Buffer.concat([key, Buffer.from(suffix), aes ? Buffer.from('sAlT', 'latin1') : Buffer.alloc(0)]));
  return hash.subarray(0, Math.min(key.length + 5, 16));
}

/** AES-CBC, the first 16 bytes being the IV; a trailing partial block is dropped (PDF.js does too), the padding kept (a few bytes). */
function aesDecrypt(algorithm: 'aes-128-cbc' | 'aes-256-cbc', key: Buffer, data: Buffer): Buffer {
  if (data.length < 32) return Buffer.alloc(0);
  const body = data.subarray(16, 16 + Math.floor((data.length - 16) / 16) * 16);
  return createDecipheriv(algorithm, key, data.subarray(0, 16)).setAutoPadding(false).update(body);
}

/** RC4 (not in OpenSSL 3's default provider, so written out: it is ten lines). */
function rc4(key: Buffer, data: Buffer): Buffer {
  const s = new Uint8Array(256);
  for (let i = 0; i < 256; i++) s[i] = i;
  for (let i = 0, j = 0; i < 256; i++) {
    j = (j + s[i] + key[i % key.length]) & 0xff;
    [s[i], s[j]] = [s[j], s[i]];
  }
  const out = Buffer.alloc(data.length);
  for (let n = 0, i = 0, j = 0; n < data.length; n++) {
    i = (i + 1) & 0xff;
    j = (j + s[i]) & 0xff;
    [s[i], s[j]] = [s[j], s[i]];
    out[n] = data[n] ^ s[(s[i] + s[j]) & 0xff];
  }
  return out;
}

function md5(data: Buffer): Buffer {
  return createHash('md5').update(data).digest();
}

function bytesOf(value: PdfValue | undefined): Buffer {
  return Buffer.from(value instanceof PdfString ? value.bytes : '', 'latin1');
}
