import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { fmt, ResultBuilder } from './results';
import { ServiceProcess } from './stack';

/**
 * Issue 10, §4: the inputs that used to end in 500s, shared by the fuzz tests of /api/mcp and of
 * the REST routes: U+0000 and lone surrogates (in values and in property names), very deep
 * nesting, and forged list cursors.
 */

/** Strings PostgreSQL would refuse or silently alter, and their neighbours. */
export const HOSTILE_STRINGS = [
  '\u0000',
  'a\u0000b',
  '\u0000\u0000\u0000',
  'x'.repeat(300) + '\u0000',
  '\ud800',
  '\udfff',
  'label \ud83d',
  '\udc00\ud800',
  'ok \ud83d\udca5',
  '\u0000\ud800',
  '%00',
  '\\u0000',
  '\\ud800',
] as const;

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...HOSTILE_STRINGS), weight: 4 },
  // Random text with U+0000 or a lone surrogate spliced in at a random place.
  {
    arbitrary: fc
      .tuple(fc.string({ maxLength: 20 }), fc.constantFrom('\u0000', '\ud800', '\udc00', '\udbff'), fc.string({ maxLength: 20 }))
      .map(([a, bad, b]) => `${a}${bad}${b}`),
    weight: 2,
  },
);

/** True when a string holds U+0000 or a lone surrogate (the service's rule, restated for the tests). */
export function isIllFormed(text: string): boolean {
  return text.includes('\u0000') || !text.isWellFormed();
}

/** True when any string or property name in a JSON value is ill-formed. */
export function holdsIllFormed(value: unknown): boolean {
  const stack = [value];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (isIllFormed(v)) return true;
    } else if (Array.isArray(v)) {
      stack.push(...v);
    } else if (v && typeof v === 'object') {
      for (const [k, item] of Object.entries(v)) {
        if (isIllFormed(k)) return true;
        stack.push(item);
      }
    }
  }
  return false;
}

/** Depths of the deep-nesting cases: shallow enough to be fine, and deep enough to overflow a recursive walker. */
export const DEPTHS = [1_000, 20_000, 100_000, 400_000] as const;

/** `value` wrapped in `depth` arrays (or objects): `[[[...value...]]]`, as JSON text. */
export function deepJson(depth: number, shape: 'array' | 'object' = 'array', value = '1'): string {
  return shape === 'array' ? `${'['.repeat(depth)}${value}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}${value}${'}'.repeat(depth)}`;
}

export const deepNesting: fc.Arbitrary<{ depth: number; shape: 'array' | 'object'; text: string }> = fc
  .tuple(fc.constantFrom(...DEPTHS), fc.constantFrom('array' as const, 'object' as const))
  .map(([depth, shape]) => ({ depth, shape, text: deepJson(depth, shape) }));

/**
 * Cursors the service never issued, in the shape of its own (`<base64url JSON [tool, key, id]>.<mac>`):
 * impossible dates, year 0000, unsigned, another tool's, and `real` re-encoded with another id.
 */
export function forgedCursors(tool: string, real?: string): string[] {
  const mac = real?.split('.')[1] ?? 'AAAAAAAAAAAAAAAAAAAAAA';
  const encode = (payload: unknown[]) => Buffer.from(JSON.stringify(payload)).toString('base64url');
  const out = [
    `${encode([tool, '2026-02-30T00:00:00.000Z', randomUUID()])}.${mac}`,
    `${encode([tool, '0000-01-01T00:00:00.000Z', randomUUID()])}.${mac}`,
    encode([tool, '2026-02-30T00:00:00.000Z', randomUUID()]),
    `${encode(['list_contacts', 'Ada', randomUUID()])}.${mac}`,
    `${encode([tool, '\u0000', randomUUID()])}.${mac}`,
  ];
  if (real) {
    const [, key] = JSON.parse(Buffer.from(real.split('.')[0], 'base64url').toString('utf8')) as string[];
    out.push(`${encode([tool, key, randomUUID()])}.${mac}`, real.slice(0, -2), `${real}x`);
  }
  return out;
}

/** The error lines of a process's log; records their count (and the first one) as figures. */
export function errorLinesOf(result: ResultBuilder, service: ServiceProcess): string[] {
  const lines = service.errorLines();
  result.figure('process alive at the end / error lines in its log', `${service.alive} / ${lines.length}`);
  if (lines.length) result.notes.push(`first error line: ${lines[0].slice(0, 400)}`);
  return lines;
}

/** The figure of the deep-nesting cases: how many, and how many were refused with a 4xx. */
export function deepNestingFigure(result: ResultBuilder, requests: number, refused: number): void {
  result.figure(`deep nesting (${DEPTHS.map((d) => fmt(d)).join(', ')} levels): requests / refused with a 4xx`, `${fmt(requests)} / ${fmt(refused)}`);
}
