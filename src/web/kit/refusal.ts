import { httpStatusOf } from '../../common/error-status';
import { DomainError, DomainErrorCode } from '../../common/errors';

/**
 * The one error table of the web forms: how an error of each domain code meets the form that
 * caused it. `field`: a refusal of what was typed, shown next to its field (or above the form)
 * with its status (error-status.ts); `page`: not the form's to show (the error page,
 * PageErrorFilter). NOT_FOUND is the form's only for a field whose table lists it in `notFound`
 * (a line chosen in the form that is gone); otherwise it is the thing the page is about (404).
 */
export const ON_A_FORM: Readonly<Record<DomainErrorCode, 'field' | 'page'>> = {
  VALIDATION: 'field',
  CONFLICT: 'field',
  CAP_REACHED: 'field',
  URL_REFUSED: 'field',
  UNPROCESSABLE: 'field',
  SEND_REFUSED: 'field',
  NOT_FOUND: 'page',
  FORBIDDEN: 'page',
  UNAUTHORIZED: 'page',
  RATE_LIMITED: 'page',
};

/**
 * A form's fields as refusals name them → the form's field: the refusal's field as it is
 * (`imap.host`), else its first segment (`channelScope.channels[0]` is `channelScope`).
 */
export interface FieldTable<F extends string> {
  fields: Readonly<Record<string, F>>;
  /** Arguments whose NOT_FOUND is a refusal of the form (a chosen line that is gone). */
  notFound?: readonly string[];
  /** A refusal naming an argument the table does not list: above the form (`whole`) or the error page (`page`, the default). */
  unlisted?: 'whole' | 'page';
  /** The sentence shown for a refusal (default: its own message). */
  say?: (error: DomainError, field: F | undefined) => string;
}

/** A refusal of a form: its status, the field it is shown next to (none: above the form), the sentence. */
export interface Refusal<F extends string> {
  status: number;
  field?: F;
  message: string;
  error: DomainError;
}

/** The refusal `error` is for the form of `table`; anything else is thrown on (to the error page). */
export function refusalOf<F extends string>(error: unknown, table: FieldTable<F>): Refusal<F> {
  if (!(error instanceof DomainError)) throw error;
  const named = error.field;
  const argument = named === undefined || Object.hasOwn(table.fields, named) ? named : named.split(/[.[]/)[0];
  const listed = argument !== undefined && Object.hasOwn(table.fields, argument);
  const onForm = ON_A_FORM[error.code] === 'field' || (error.code === 'NOT_FOUND' && listed && (table.notFound ?? []).includes(argument));
  if (!onForm) throw error;
  if (argument !== undefined && !listed && (table.unlisted ?? 'page') === 'page') throw error;
  const field = listed ? table.fields[argument] : undefined;
  return { status: httpStatusOf(error), field, message: table.say ? table.say(error, field) : error.message, error };
}
