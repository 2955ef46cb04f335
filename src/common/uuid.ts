import { ValidateBy, ValidationOptions } from 'class-validator';

/**
 * The one id rule (docs/decisions.md, "One id rule, one email rule"): an id is a UUID in its
 * 8-4-4-4-12 hex form, any version, in either letter case, as PostgreSQL's `uuid` type reads it.
 * Every dialect judges ids by it: the tools' JSON Schemas (`format: 'uuid'`, tools/), the
 * REST DTOs (`@IsUuid`) and path parameters (`UuidParam`), and the services' own checks (`isUuid`).
 */
const UUID_SOURCE = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

/** A UUID a caller sent: either letter case (RFC 9562 reads hex digits without regard to case). */
export const UUID_PATTERN = new RegExp(UUID_SOURCE, 'i');

/**
 * A UUID as the service writes it (lowercase): for tokens the service minted itself (cursors,
 * signed links), which must read back byte for byte as they were written.
 */
export const LOWERCASE_UUID_PATTERN = new RegExp(UUID_SOURCE);

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID_PATTERN.test(value);
}

/** class-validator's form of the id rule; the message is the caller's to give. */
export function IsUuid(options: ValidationOptions & { message: string }): PropertyDecorator {
  return ValidateBy({ name: 'isUuid', validator: { validate: (value): boolean => isUuid(value) } }, options);
}
