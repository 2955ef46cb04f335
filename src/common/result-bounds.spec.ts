import { charLength } from './result-bounds';

describe('charLength', () => {
  it('counts Unicode code points: a surrogate pair is one character, as the schemas and PostgreSQL count', () => {
    expect(charLength('')).toBe(0);
    expect(charLength('abc')).toBe(3);
    expect(charLength('é漢')).toBe(2);
    expect(charLength('🎉')).toBe(1);
    expect(charLength('a🎉b🎉')).toBe(4);
    expect(charLength('🎉'.repeat(1600))).toBe(1600);
    expect(charLength('🎉'.repeat(1600))).toBe(Array.from('🎉'.repeat(1600)).length);
  });

  it('counts a lone surrogate as one character, as Array.from does', () => {
    for (const text of ['\ud83c', '\udf89', '\udf89\ud83c', 'a\ud83cb', '\ud83c\ud83c\udf89']) expect(charLength(text)).toBe(Array.from(text).length);
  });
});
