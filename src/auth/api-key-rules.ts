import { ValidationArguments, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';
import { stringFault } from '../common/well-formed';
import { keyPermissionsProblem } from '../identity/key-permissions';

/** A key name's length in characters (code points, as PostgreSQL's `length()` and api_keys_name_check count). */
export const API_KEY_NAME_MAX_LENGTH = 200;

/**
 * The one rule for an API key's name, for the admin API and for Settings → API keys: a string of
 * 1 to 200 characters that is not only blanks (a name is how people tell keys apart in a list).
 * Returns what is wrong, as a message starting with `name`, or null.
 */
export function apiKeyNameProblem(name: unknown): string | null {
  if (typeof name !== 'string') return 'name must be a string';
  if (name.trim().length === 0) return 'name should not be empty';
  if ([...name].length > API_KEY_NAME_MAX_LENGTH) return `name must be at most ${API_KEY_NAME_MAX_LENGTH} characters`;
  if (stringFault(name)) return 'name must be well-formed text without U+0000';
  return null;
}

/** The rule above as a class-validator constraint, for DTOs: `@Validate(ApiKeyNameRule)`. */
@ValidatorConstraint({ name: 'apiKeyName' })
export class ApiKeyNameRule implements ValidatorConstraintInterface {
  validate(name: unknown): boolean {
    return apiKeyNameProblem(name) === null;
  }

  defaultMessage(args: ValidationArguments): string {
    return apiKeyNameProblem(args.value) ?? 'name is not valid';
  }
}

/** A key's permissions (identity/key-permissions.ts) as a class-validator constraint, for DTOs: `@Validate(KeyPermissionsRule)`. */
@ValidatorConstraint({ name: 'keyPermissions' })
export class KeyPermissionsRule implements ValidatorConstraintInterface {
  validate(permissions: unknown): boolean {
    return keyPermissionsProblem(permissions) === null;
  }

  defaultMessage(args: ValidationArguments): string {
    return keyPermissionsProblem(args.value) ?? 'permissions are not valid';
  }
}
