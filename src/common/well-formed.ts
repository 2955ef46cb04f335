import { ValidationError } from './errors';

/**
 * The one rule for text the service takes in: a string is acceptable when it is well-formed
 * Unicode (no lone UTF-16 surrogate) and holds no U+0000. PostgreSQL refuses NUL in `text` and
 * `jsonb`, and `jsonb` refuses a lone surrogate's `\ud800` escape; in `text` the driver would turn
 * a lone surrogate into U+FFFD behind our back, so the row would no longer match the value we hold.
 *
 * Two ways to apply it: input a caller can correct (REST bodies, queries, route params, MCP tool
 * arguments, SMS ingest) is refused with the path of the first offending string or property name
 * (`findIllFormed`, `assertWellFormed`); input that must never be refused (inbound email, which the
 * mail server would retry forever) is repaired instead (`wellFormedCopy`: U+0000 removed, lone
 * surrogates replaced by U+FFFD).
 */

const NUL = '\u0000';

export type StringFault = 'NUL' | 'LONE_SURROGATE';

/** What is wrong with a string, or null when it is acceptable. */
export function stringFault(text: string): StringFault | null {
  if (text.includes(NUL)) return 'NUL';
  if (!text.isWellFormed()) return 'LONE_SURROGATE';
  return null;
}

/** U+0000 removed and every lone surrogate replaced by U+FFFD; other text unchanged. */
export function wellFormedText(text: string): string {
  if (stringFault(text) === null) return text;
  return text.replaceAll(NUL, '').toWellFormed();
}

export interface IllFormedString {
  /** Where it is, in the form the validation messages use: `channelAccess.lines[0]`, `add[1].name`. */
  path: string;
  fault: StringFault;
  /** True when the fault is in a property name rather than a value. */
  inKey: boolean;
  /** One sentence naming the path, safe to show (offending text is JSON-escaped). */
  message: string;
}

/** One step of the walk: the node, and how to name it (built only when something is wrong). */
interface Step {
  value: unknown;
  parent: Step | undefined;
  segment: string | number | undefined;
}

/**
 * The first string or property name (depth first, in document order) that breaks the rule, or
 * undefined. Walks arrays and plain objects only (a Buffer or a class instance is not input text).
 * `root` names the value itself when it is a string, or prefixes nothing when empty. Iterative:
 * a deeply nested body cannot overflow the stack here.
 */
export function findIllFormed(value: unknown, root = ''): IllFormedString | undefined {
  const stack: Step[] = [{ value, parent: undefined, segment: undefined }];
  while (stack.length > 0) {
    const step = stack.pop()!;
    const node = step.value;
    if (typeof node === 'string') {
      const fault = stringFault(node);
      if (fault) return describe(pathOf(step, root), fault, false);
      continue;
    }
    if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push({ value: node[i], parent: step, segment: i });
      continue;
    }
    if (!isPlainObject(node)) continue;
    const keys = Object.keys(node);
    for (const key of keys) {
      const fault = stringFault(key);
      if (fault) return describe(pathOf({ value: undefined, parent: step, segment: key }, root), fault, true);
    }
    for (let i = keys.length - 1; i >= 0; i--) stack.push({ value: node[keys[i]], parent: step, segment: keys[i] });
  }
  return undefined;
}

/** Throws a ValidationError naming the first offending string's path (see findIllFormed). */
export function assertWellFormed(value: unknown, root = ''): void {
  const found = findIllFormed(value, root);
  if (found) throw new ValidationError(found.message, found.path);
}

/**
 * A copy in which every string (values and property names, in arrays and plain objects) obeys the
 * rule (see wellFormedText); Buffers, Dates and other objects are kept as they are.
 */
export function wellFormedCopy<T>(value: T): T {
  if (typeof value === 'string') return wellFormedText(value) as T;
  if (Array.isArray(value)) return value.map((item) => wellFormedCopy(item)) as T;
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[wellFormedText(key)] = wellFormedCopy(item);
  return out as T;
}

/**
 * A plain object of any realm: its prototype is null or an `Object.prototype` (whose own prototype
 * is null). Objects that crossed a worker thread (structured clone) or come from Jest's vm context
 * have another realm's Object.prototype; Buffers, Dates and class instances have a longer chain.
 */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as object | null;
  return proto === null || (Object.getPrototypeOf(proto) === null && Object.prototype.toString.call(value) === '[object Object]');
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

function pathOf(step: Step, root: string): string {
  const segments: Array<string | number> = [];
  for (let s: Step | undefined = step; s?.segment !== undefined; s = s.parent) segments.push(s.segment);
  let path = root;
  for (const segment of segments.reverse()) {
    if (typeof segment === 'number') path += `[${segment}]`;
    else if (IDENTIFIER.test(segment)) path += path ? `.${segment}` : segment;
    else path += `[${JSON.stringify(segment)}]`;
  }
  return path;
}

function describe(path: string, fault: StringFault, inKey: boolean): IllFormedString {
  const what = fault === 'NUL' ? 'U+0000 (NUL), which is not allowed' : 'a lone UTF-16 surrogate, which is not well-formed Unicode';
  const subject = inKey ? `${path}: the property name` : path || 'the value';
  return { path, fault, inKey, message: `${subject} contains ${what}` };
}
