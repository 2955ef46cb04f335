import { imageSize } from 'image-size';
import { ExtractionError, ExtractionLimitError } from './extraction.types';

/**
 * The image-bomb guard of OCR: a PNG of a few KB can declare 50,000 × 50,000 pixels, which
 * tesseract's decoder (in its own WebAssembly memory, with no cap) would inflate to gigabytes. The
 * size an image declares is read from its header before OCR, and an image past the pixel limit
 * is refused.
 *
 * `image-size` reads PNG, BMP, TIFF and WebP headers. Two formats are read here instead, the way
 * their decoders read them: JPEG (image-size knows only the SOF0–2 frame markers and skips any
 * other, but libjpeg decodes the first frame header of any kind, arithmetic and lossless ones
 * included) and GIF (image-size gives the logical screen, but giflib allocates every frame at the
 * size its own image descriptor declares).
 */
export function checkImagePixels(bytes: Buffer, maxPixels: number): void {
  const { pixels, declared } = declaredSize(bytes);
  if (pixels > maxPixels) {
    throw new ExtractionLimitError(
      'image-pixels',
      `the image declares ${declared}, more than the limit of ${maxPixels.toLocaleString('en-US')} pixels; it was not read (a possible image bomb)`,
    );
  }
}

function declaredSize(bytes: Buffer): { pixels: number; declared: string } {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return dimensions(jpegSize(bytes));
  if (
    bytes
      .subarray(0, 6)
      .toString('latin1')
      .match(/^GIF8[79]a$/)
  )
    return gifSize(bytes);
  let size: { width?: number; height?: number };
  try {
    size = imageSize(bytes);
  } catch (error) {
    throw new ExtractionError(`not a readable image: ${(error as Error).message}`);
  }
  return dimensions({ width: size.width ?? 0, height: size.height ?? 0 });
}

function dimensions({ width, height }: { width: number; height: number }): { pixels: number; declared: string } {
  return { pixels: width * height, declared: `${width} × ${height} pixels` };
}

function jpegSize(bytes: Buffer): { width: number; height: number } {
  const frame = jpegFrame(bytes);
  if (!frame) throw new ExtractionError('not a readable image: the JPEG has no frame header');
  return frame;
}

/** The size in the first frame header (SOFn) of a JPEG, found by walking its segments as libjpeg does; null when there is none. */
export function jpegFrame(bytes: Buffer): { width: number; height: number } | null {
  if (bytes.length < 4 || bytes[0] !== 0xff || bytes[1] !== 0xd8) return null;
  let pos = 2;
  while (pos + 4 <= bytes.length) {
    if (bytes[pos] !== 0xff) return null;
    const marker = bytes[pos + 1];
    if (marker === 0xff) {
      pos += 1; // fill byte
      continue;
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      pos += 2; // markers without a length
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) break; // end of image, or scan data before any frame header
    const length = bytes.readUInt16BE(pos + 2);
    const isFrame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isFrame) {
      if (pos + 9 > bytes.length) break;
      return { height: bytes.readUInt16BE(pos + 5), width: bytes.readUInt16BE(pos + 7) };
    }
    pos += 2 + length;
  }
  return null;
}

/** Every frame of a GIF, as giflib allocates them (each at its own image descriptor's size), added up. */
function gifSize(bytes: Buffer): { pixels: number; declared: string } {
  const screen = { width: bytes.readUInt16LE(6), height: bytes.readUInt16LE(8) };
  let pixels = 0;
  let frames = 0;
  let largest = { width: 0, height: 0 };
  let pos = 13 + (bytes[10] & 0x80 ? 3 * 2 ** ((bytes[10] & 0x07) + 1) : 0);
  const skipSubBlocks = () => {
    while (pos < bytes.length && bytes[pos] !== 0) pos += bytes[pos] + 1;
    pos += 1;
  };
  while (pos < bytes.length) {
    const block = bytes[pos];
    if (block === 0x3b) break;
    if (block === 0x21) {
      pos += 2;
      skipSubBlocks();
    } else if (block === 0x2c) {
      if (pos + 10 > bytes.length) break;
      const frame = { width: bytes.readUInt16LE(pos + 5), height: bytes.readUInt16LE(pos + 7) };
      const flags = bytes[pos + 9];
      pixels += frame.width * frame.height;
      frames += 1;
      if (frame.width * frame.height > largest.width * largest.height) largest = frame;
      pos += 10 + (flags & 0x80 ? 3 * 2 ** ((flags & 0x07) + 1) : 0) + 1; // descriptor, local colour table, LZW code size
      skipSubBlocks();
    } else {
      break; // damaged: giflib stops here too
    }
  }
  pixels = Math.max(pixels, screen.width * screen.height);
  return frames > 1
    ? { pixels, declared: `${frames} frames of ${pixels.toLocaleString('en-US')} pixels in all` }
    : dimensions(largest.width * largest.height > screen.width * screen.height ? largest : screen);
}
