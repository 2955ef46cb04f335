/**
 * How a feature declares its configuration (docs/configuration.md, "Where a setting is declared").
 * A feature's `<feature>.config.ts` is a slice: a tree shaped like its part of AppConfig whose
 * leaves are settings, each naming its environment variable once, with its parser, default and
 * validation. config/app-config.ts assembles the slices; AppConfig's type is derived from them.
 */

/** What reading a variable may depend on: whether the process runs in development (APP_ENV). */
export interface ReadContext {
  readonly isDevelopment: boolean;
}

/** A bad configuration: the process refuses to start, with one line per problem naming its variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Thrown by a parser when the variable's value is refused: one `VARIABLE: reason` line per reason. */
export class Refused extends Error {
  readonly reasons: string[];

  constructor(...reasons: string[]) {
    super(reasons.join('; '));
    this.reasons = reasons;
  }
}

/** A node of a slice whose value, once the environment is read, is a T. */
export abstract class Value<T> {
  /** Carries T for the type of AppConfig; never set. */
  declare readonly valueType?: T;
}

/** One environment variable, read into a T; a parser that throws Refused stops the boot. */
export class Setting<T> extends Value<T> {
  constructor(
    readonly variable: string,
    /** `text` is undefined when the variable is unset or empty. */
    readonly read: (text: string | undefined, context: ReadContext) => T,
  ) {
    super();
  }

  /** The same variable, its value checked or converted further (throw Refused to refuse it). */
  to<U>(convert: (value: T, context: ReadContext) => U): Setting<U> {
    return new Setting(this.variable, (text, context) => convert(this.read(text, context), context));
  }
}

type ValuesOf<I extends readonly Setting<unknown>[]> = { -readonly [K in keyof I]: I[K] extends Setting<infer V> ? V : never };

/** A value computed from settings once all of them are valid (a default taken from another, several variables in one field). */
export class Derived<T> extends Value<T> {
  constructor(
    readonly inputs: readonly Setting<unknown>[],
    readonly compute: (values: unknown[], context: ReadContext) => T,
  ) {
    super();
  }

  /** The same inputs, the value converted further. */
  to<U>(convert: (value: T, context: ReadContext) => U): Derived<U> {
    return new Derived(this.inputs, (values, context) => convert(this.compute(values, context), context));
  }
}

/** A field computed from the values of `inputs`, read (and validated) as settings of their own. */
export function derive<const I extends readonly Setting<unknown>[], T>(inputs: I, compute: (values: ValuesOf<I>, context: ReadContext) => T): Derived<T> {
  return new Derived(inputs, compute as (values: unknown[], context: ReadContext) => T);
}

/** A rule between settings, checked when each of them is valid on its own; its message names `subject`. */
export interface Rule {
  readonly subject: Setting<unknown>;
  readonly others: readonly Setting<unknown>[];
  readonly test: (value: unknown, others: unknown[]) => string | undefined;
}

/** `test` answers why `subject` is refused given the `others`' values, or undefined when it is not. */
export function check<S, const O extends readonly Setting<unknown>[]>(
  subject: Setting<S>,
  others: O,
  test: (value: S, ...others: ValuesOf<O>) => string | undefined,
): Rule {
  return { subject, others, test: (value, values) => (test as (value: unknown, ...others: unknown[]) => string | undefined)(value, ...values) };
}

/** A part of AppConfig: nested objects whose leaves are settings or values derived from them. */
export interface Tree {
  readonly [key: string]: Value<unknown> | Tree;
}

/** A feature's configuration: where its settings go in AppConfig, and the rules between them. */
export interface Slice<T extends Tree = Tree> {
  readonly tree: T;
  readonly rules: readonly Rule[];
}

export function defineSlice<T extends Tree>(tree: T, rules: readonly Rule[] = []): Slice<T> {
  return { tree, rules };
}

/** The configuration a tree reads into: each setting replaced by its value. */
export type ConfigOf<T> = T extends Value<infer V> ? V : { -readonly [K in keyof T]: ConfigOf<T[K]> };

type Default<T> = T | ((context: ReadContext) => T);

function defaultOf<T>(value: Default<T>, context: ReadContext): T {
  return typeof value === 'function' ? (value as (context: ReadContext) => T)(context) : value;
}

/** Unset: `default`, or undefined, or refused when `required` (always, or only in production). */
function whenUnset<T>(variable: string, options: { default?: Default<T>; required?: true | 'production' }, context: ReadContext): T | undefined {
  if (options.default !== undefined) return defaultOf(options.default, context);
  if (options.required === true) throw new Refused('is required');
  if (options.required === 'production' && !context.isDevelopment) throw new Refused('is required when APP_ENV=production');
  return undefined;
}

/** The value must match `pattern`, else it is refused with `${variable} ${message}`. */
type TextOptions = { pattern?: undefined } | { pattern: RegExp; message: string };

/** A string variable, matching `pattern` when one is given. */
export function text(variable: string, options: TextOptions & ({ default: Default<string> } | { required: true })): Setting<string>;
export function text(variable: string, options?: TextOptions & { required?: 'production' }): Setting<string | undefined>;
export function text(variable: string, options: TextOptions & { default?: Default<string>; required?: true | 'production' } = {}): Setting<string | undefined> {
  return new Setting(variable, (value, context) => {
    if (value === undefined) return whenUnset(variable, options, context);
    if (options.pattern && !options.pattern.test(value)) throw new Refused(`${variable} ${options.message}`);
    return value;
  });
}

/** A whole number from `min` to `max`, written in decimal digits. */
export function integer(variable: string, options: { min: number; max: number; default: number }): Setting<number>;
export function integer(variable: string, options: { min: number; max: number }): Setting<number | undefined>;
export function integer(variable: string, options: { min: number; max: number; default?: number }): Setting<number | undefined> {
  return new Setting(variable, (value, context) => {
    if (value === undefined) return whenUnset(variable, options, context);
    if (/^-\d+$/.test(value)) throw new Refused(`${variable} must not be less than ${options.min}`);
    if (!/^\d+$/.test(value)) throw new Refused(`${variable} must be an integer number`);
    const number = Number(value);
    if (number < options.min) throw new Refused(`${variable} must not be less than ${options.min}`);
    if (number > options.max) throw new Refused(`${variable} must not be greater than ${options.max}`);
    return number;
  });
}

/** One of the given words, as written. */
export function oneOf<const V extends string>(variable: string, values: readonly V[], options: { default: Default<V> }): Setting<V>;
export function oneOf<const V extends string>(variable: string, values: readonly V[]): Setting<V | undefined>;
export function oneOf<const V extends string>(variable: string, values: readonly V[], options: { default?: Default<V> } = {}): Setting<V | undefined> {
  return new Setting(variable, (value, context) => {
    if (value === undefined) return whenUnset(variable, options, context);
    if (!(values as readonly string[]).includes(value)) throw new Refused(`${variable} must be one of the following values: ${values.join(', ')}`);
    return value as V;
  });
}

/** The value the leaf holds for every environment (the name of a variable, a fixed rule of development). */
export function constant<T>(value: T | ((context: ReadContext) => T)): Derived<T> {
  return new Derived([], (_values, context) => defaultOf(value, context));
}

/**
 * Reads every setting of the slices from `env` (an empty variable counts as unset), checks the
 * rules, and assembles AppConfig; throws one ConfigError naming every bad variable. `environment`
 * is read first: it says whether the others are read for development.
 */
export function assemble<T>(slices: readonly Slice[], rules: readonly Rule[], environment: Setting<string>, env: NodeJS.ProcessEnv): T {
  const settings = settingsOf(slices);
  const values = new Map<Setting<unknown>, unknown>();
  const problems: string[] = [];
  const read = (setting: Setting<unknown>, context: ReadContext) => {
    try {
      values.set(setting, setting.read(env[setting.variable] || undefined, context));
    } catch (error) {
      if (!(error instanceof Refused)) throw error;
      problems.push(...error.reasons.map((reason) => `${setting.variable}: ${reason}`));
    }
  };
  read(environment, { isDevelopment: false });
  const context: ReadContext = { isDevelopment: values.get(environment) === 'development' };
  for (const setting of settings) if (setting !== environment) read(setting, context);
  for (const rule of [...slices.flatMap((slice) => slice.rules), ...rules]) {
    const inputs = [rule.subject, ...rule.others];
    const unknown = inputs.find((setting) => !settings.includes(setting));
    if (unknown) throw new Error(`a rule checks ${unknown.variable}, which no slice places in AppConfig`);
    if (!inputs.every((setting) => values.has(setting))) continue;
    const problem = rule.test(
      values.get(rule.subject),
      rule.others.map((setting) => values.get(setting)),
    );
    if (problem) problems.push(`${rule.subject.variable}: ${problem}`);
  }
  if (problems.length) throw new ConfigError(`Invalid configuration:\n  - ${[...new Set(problems)].join('\n  - ')}`);

  const build = (node: Value<unknown> | Tree): unknown => {
    if (node instanceof Setting) return values.get(node);
    if (node instanceof Derived)
      return node.compute(
        node.inputs.map((input) => values.get(input)),
        context,
      );
    return Object.fromEntries(Object.entries(node).map(([key, child]) => [key, build(child)]));
  };
  const config: Record<string, unknown> = {};
  for (const slice of slices) merge(config, build(slice.tree) as Record<string, unknown>, '');
  return config as T;
}

/** Every setting the slices read, once each, in the order they are declared; a variable declared twice is a bug. */
export function settingsOf(slices: readonly Slice[]): Setting<unknown>[] {
  const found = new Map<string, Setting<unknown>>();
  const visit = (node: Value<unknown> | Tree): void => {
    if (node instanceof Setting) {
      const known = found.get(node.variable);
      if (known && known !== node) throw new Error(`${node.variable} is declared twice`);
      found.set(node.variable, node);
    } else if (node instanceof Derived) node.inputs.forEach(visit);
    else Object.values(node).forEach(visit);
  };
  for (const slice of slices) visit(slice.tree);
  return [...found.values()];
}

/** Two slices never fill the same field. */
function merge(into: Record<string, unknown>, from: Record<string, unknown>, path: string): void {
  for (const [key, value] of Object.entries(from)) {
    const existing = into[key];
    if (!(key in into)) into[key] = value;
    else if (isGroup(existing) && isGroup(value)) merge(existing, value, `${path}${key}.`);
    else throw new Error(`two slices set ${path}${key}`);
  }
}

function isGroup(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}
