import { exceedsJsonDepth, MAX_JSON_DEPTH } from './json-depth';

const nested = (depth: number, open = '[', close = ']') => open.repeat(depth) + close.repeat(depth);

describe('exceedsJsonDepth', () => {
  it(`accepts ${MAX_JSON_DEPTH} levels and refuses ${MAX_JSON_DEPTH + 1}`, () => {
    expect(exceedsJsonDepth(nested(MAX_JSON_DEPTH))).toBe(false);
    expect(exceedsJsonDepth(nested(MAX_JSON_DEPTH + 1))).toBe(true);
  });

  it('counts objects and arrays alike, and mixed', () => {
    const objects = (depth: number) => '{"a":'.repeat(depth - 1) + '{}' + '}'.repeat(depth - 1);
    expect(exceedsJsonDepth(objects(3), 3)).toBe(false);
    expect(exceedsJsonDepth(objects(4), 3)).toBe(true);
    expect(exceedsJsonDepth('{"a":[{"b":[1]}]}', 4)).toBe(false);
    expect(exceedsJsonDepth('{"a":[{"b":[1]}]}', 3)).toBe(true);
  });

  it('measures the deepest point, not the number of brackets', () => {
    const wide = `[${Array.from({ length: 10_000 }, () => '[[1]]').join(',')}]`;
    expect(exceedsJsonDepth(wide, 3)).toBe(false);
    expect(exceedsJsonDepth(wide, 2)).toBe(true);
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(exceedsJsonDepth(JSON.stringify({ text: '[[[[[[{{{{{{' }), 1)).toBe(false);
    expect(exceedsJsonDepth(JSON.stringify({ text: 'say \\"[[[[[\\" and "{{{{"' }), 1)).toBe(false);
    expect(exceedsJsonDepth('["\\\\", [[1]]]', 2)).toBe(true); // an escaped backslash ends before the quote
  });

  it('scans UTF-8 bytes of a Buffer the same as the string', () => {
    const text = JSON.stringify({ name: 'Zoë 🙂 [{', list: [[['ü']]] });
    expect(exceedsJsonDepth(Buffer.from(text, 'utf8'), 4)).toBe(false);
    expect(exceedsJsonDepth(Buffer.from(text, 'utf8'), 3)).toBe(true);
    expect(exceedsJsonDepth(text, 3)).toBe(true);
  });

  it('answers for invalid JSON too, without throwing', () => {
    expect(exceedsJsonDepth('[[[[[')).toBe(false);
    expect(exceedsJsonDepth('['.repeat(100))).toBe(true);
    expect(exceedsJsonDepth(']]]]}}}{')).toBe(false);
    expect(exceedsJsonDepth('')).toBe(false);
  });

  it('scans 400,000 levels in one pass without recursion', () => {
    expect(exceedsJsonDepth(nested(400_000))).toBe(true);
    expect(exceedsJsonDepth(nested(400_000, '{"a":', '}'))).toBe(true);
  });
});
