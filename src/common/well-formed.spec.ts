import { runInNewContext } from 'node:vm';
import { ValidationError } from './errors';
import { assertWellFormed, findIllFormed, stringFault, wellFormedCopy, wellFormedText } from './well-formed';

describe('well-formed text', () => {
  it.each([
    ['plain text', 'hello', null],
    ['emoji (a surrogate pair)', 'ok 💥', null],
    ['an empty string', '', null],
    ['U+0000', 'a\u0000b', 'NUL'],
    ['a lone high surrogate', '\ud800', 'LONE_SURROGATE'],
    ['a lone low surrogate', 'x\udc00', 'LONE_SURROGATE'],
    ['a pair in the wrong order', '\udc00\ud800', 'LONE_SURROGATE'],
  ])('judges %s', (_, text, fault) => {
    expect(stringFault(text)).toBe(fault);
  });

  it('repairs text: U+0000 removed, lone surrogates become U+FFFD, pairs kept', () => {
    expect(wellFormedText('a\u0000b\u0000')).toBe('ab');
    expect(wellFormedText('x\ud800y💥\udc00')).toBe('x\ufffdy💥\ufffd');
    const fine = 'unchanged';
    expect(wellFormedText(fine)).toBe(fine);
  });
});

describe('findIllFormed', () => {
  it('answers undefined for acceptable input of any shape', () => {
    expect(findIllFormed({ a: ['x', 1, null, true, { b: 'ü' }], c: Buffer.from([0]) })).toBeUndefined();
    expect(findIllFormed(undefined)).toBeUndefined();
  });

  it.each([
    [{ body: 'hi\u0000' }, '', 'body', 'body contains U+0000 (NUL), which is not allowed'],
    [
      { channelAccess: { lines: ['+15550001111', '\ud800'] } },
      '',
      'channelAccess.lines[1]',
      'channelAccess.lines[1] contains a lone UTF-16 surrogate, which is not well-formed Unicode',
    ],
    [{ add: [{ name: 'ok' }, { name: '\udfff' }] }, '', 'add[1].name', 'add[1].name contains a lone UTF-16 surrogate, which is not well-formed Unicode'],
    [{ 'odd key': { 'x\u0000': 1 } }, '', '["odd key"]["x\\u0000"]', '["odd key"]["x\\u0000"]: the property name contains U+0000 (NUL), which is not allowed'],
    ['\u0000', 'token', 'token', 'token contains U+0000 (NUL), which is not allowed'],
    [{ q: 'x\u0000' }, 'query', 'query.q', 'query.q contains U+0000 (NUL), which is not allowed'],
    ['\u0000', '', '', 'the value contains U+0000 (NUL), which is not allowed'],
  ])('names the path of %j', (value, root, path, message) => {
    expect(findIllFormed(value, root)).toMatchObject({ path, message });
  });

  it('reports the first offence in document order, a property name before its value', () => {
    expect(findIllFormed({ a: 'fine', b: ['x', '\u0000'], c: '\ud800' })?.path).toBe('b[1]');
    expect(findIllFormed({ 'k\u0000': '\ud800' })).toMatchObject({ path: '["k\\u0000"]', inKey: true, fault: 'NUL' });
  });

  it('walks a very deep value without overflowing the stack', () => {
    let deep: unknown = '\u0000';
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(findIllFormed(deep)?.fault).toBe('NUL');
    expect(findIllFormed(deep)?.path).toMatch(/^(\[0\]){200000}$/);
  });

  it('assertWellFormed throws a ValidationError with the path as its field', () => {
    let error: unknown;
    try {
      assertWellFormed({ name: 'a\u0000' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ field: 'name', message: 'name contains U+0000 (NUL), which is not allowed' });
    expect(() => assertWellFormed({ name: 'fine' })).not.toThrow();
  });
});

describe('wellFormedCopy', () => {
  it('repairs every string and property name and leaves Buffers, Dates and numbers alone', () => {
    const content = Buffer.from([0, 1, 2]);
    const at = new Date(0);
    const copy = wellFormedCopy({ subject: 'a\u0000b', list: ['\ud800', 3], nested: { 'k\u0000': 'v' }, content, at, none: null });
    expect(copy).toEqual({ subject: 'ab', list: ['\ufffd', 3], nested: { k: 'v' }, content, at, none: null });
    expect(copy.content).toBe(content);
    expect(copy.at).toBe(at);
  });

  it("repairs objects of another realm too (a worker thread's structured clone, a vm context)", () => {
    const foreign = runInNewContext('({ text: "a\\u0000b", events: [{ summary: "x\\u0000" }] })') as { text: string; events: Array<{ summary: string }> };
    expect(Object.getPrototypeOf(foreign)).not.toBe(Object.prototype);
    expect(wellFormedCopy(foreign)).toEqual({ text: 'ab', events: [{ summary: 'x' }] });
    expect(findIllFormed(foreign)).toMatchObject({ path: 'text', fault: 'NUL' });
  });
});
