import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { SLICES } from './app-config';
import { assemble, check, ConfigError, defineSlice, derive, integer, oneOf, Slice, settingsOf, text } from './settings';

const ENVIRONMENT = oneOf('APP_ENV', ['development', 'production'], { default: 'production' });
const load = (slices: Slice[], env: NodeJS.ProcessEnv, rules = [] as ReturnType<typeof check>[]) => assemble(slices, rules, ENVIRONMENT, env);

/** Every `*.config.ts` below src/ except config/'s own mechanism files. */
function sliceFiles(dir = join(__dirname, '..')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sliceFiles(path);
    return entry.name.endsWith('.config.ts') ? [path] : [];
  });
}

describe('slices', () => {
  it('assembles every slice a feature declares, so none of its variables goes unread', async () => {
    const assembled = new Set(settingsOf(SLICES));
    const files = sliceFiles();
    expect(files.length).toBeGreaterThan(10);
    for (const file of files) {
      const slices = Object.values((await import(file)) as Record<string, unknown>).filter(
        (value): value is Slice => typeof value === 'object' && value !== null && 'tree' in value,
      );
      expect({ file: relative(__dirname, file), slices: slices.length }).toEqual({ file: relative(__dirname, file), slices: 1 });
      for (const setting of settingsOf(slices))
        expect({ variable: setting.variable, assembled: assembled.has(setting) }).toEqual({ variable: setting.variable, assembled: true });
    }
  });

  it('places each setting where its slice says, with its default when unset', () => {
    const slice = defineSlice({ port: integer('PORT', { min: 0, max: 65535, default: 3000 }), db: { url: text('DB_URL', { required: true }) } });
    expect(load([slice], { DB_URL: 'postgres://x', PORT: '' })).toEqual({ port: 3000, db: { url: 'postgres://x' } });
  });

  it('merges slices that fill different fields of one group, and refuses two that fill the same field', () => {
    const a = defineSlice({ group: { a: integer('A', { min: 0, max: 9, default: 1 }) } });
    const b = defineSlice({ group: { b: integer('B', { min: 0, max: 9, default: 2 }) } });
    expect(load([a, b], {})).toEqual({ group: { a: 1, b: 2 } });
    const again = defineSlice({ group: { a: integer('C', { min: 0, max: 9, default: 3 }) } });
    expect(() => load([a, again], {})).toThrow('two slices set group.a');
  });

  it('refuses a variable declared twice, and a rule on a setting no slice places', () => {
    expect(() => load([defineSlice({ a: text('X', { default: '' }), b: text('X', { default: '' }) })], {})).toThrow('X is declared twice');
    const placed = integer('A', { min: 0, max: 9, default: 1 });
    const loose = integer('B', { min: 0, max: 9, default: 1 });
    expect(() => load([defineSlice({ a: placed })], {}, [check(placed, [loose], () => undefined)])).toThrow('a rule checks B, which no slice places');
  });

  it('names every bad variable, checks a rule only when its settings are valid, and builds derived values from valid ones only', () => {
    const low = integer('LOW', { min: 0, max: 100, default: 1 });
    const high = integer('HIGH', { min: 0, max: 100, default: 2 });
    const compute = jest.fn(([a, b]: number[]) => a + b);
    const slice = defineSlice({ low, high, sum: derive([low, high], compute) }, [
      check(low, [high], (l, h) => (l > h ? `must not exceed HIGH (${h})` : undefined)),
    ]);
    expect(() => load([slice], { LOW: '5', HIGH: '4' })).toThrow(new ConfigError('Invalid configuration:\n  - LOW: must not exceed HIGH (4)'));
    expect(() => load([slice], { LOW: '5', HIGH: 'x' })).toThrow(new ConfigError('Invalid configuration:\n  - HIGH: HIGH must be an integer number'));
    expect(compute).not.toHaveBeenCalled();
    expect(load([slice], { LOW: '1' })).toEqual({ low: 1, high: 2, sum: 3 });
  });

  it('reads APP_ENV first, so defaults and requirements can depend on development', () => {
    const slice = defineSlice({
      env: ENVIRONMENT,
      format: oneOf('FORMAT', ['json', 'pretty'], { default: ({ isDevelopment }) => (isDevelopment ? 'pretty' : 'json') }),
      token: text('TOKEN', { required: 'production' }),
    });
    expect(load([slice], { APP_ENV: 'development' })).toEqual({ env: 'development', format: 'pretty', token: undefined });
    expect(() => load([slice], {})).toThrow('TOKEN: is required when APP_ENV=production');
    expect(load([slice], { TOKEN: 't' })).toEqual({ env: 'production', format: 'json', token: 't' });
  });
});
