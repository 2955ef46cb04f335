import { buildMessage, isEmail, ValidateBy, ValidationOptions } from 'class-validator';

/**
 * The one email rule (docs/decisions.md, "One id rule, one email rule"): an address is what
 * validator.js's `isEmail` accepts with its defaults (a local part of at most 64 characters, a
 * domain name with a top-level domain, no display name), and nothing that only a quoted local part
 * allows: no quote, backslash, space, control character, comma or angle bracket, so an address
 * stored as a thread's partner or a key's allowlist entry is one token in every header, payload
 * and log it reaches. Every dialect judges addresses by it:
 * the tools' JSON Schemas (`format: 'email'`, tools/), the REST DTOs (`@IsEmailAddress`)
 * and the services' own checks (`isEmailAddress`).
 */
export function isEmailAddress(value: unknown): value is string {
  return typeof value === 'string' && !QUOTED_ONLY.test(value) && isEmail(value);
}

/** Characters an address can carry only inside a quoted local part (RFC 5321 quoted-string). */
// eslint-disable-next-line no-control-regex
const QUOTED_ONLY = /["\\\s,<>\x00-\x1f\x7f]/;

/** class-validator's form of the email rule, with `@IsEmail()`'s message ("email must be an email"). */
export function IsEmailAddress(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isEmail',
      validator: {
        validate: (value): boolean => isEmailAddress(value),
        defaultMessage: buildMessage((eachPrefix) => `${eachPrefix}$property must be an email`, options),
      },
    },
    options,
  );
}
