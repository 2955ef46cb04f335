import { ParseUUIDPipe } from '@nestjs/common';
import { ValidationError } from './errors';

/** A path id that must be a UUID; anything else is a 400 naming the parameter. */
export function UuidParam(name: string): ParseUUIDPipe {
  return new ParseUUIDPipe({ exceptionFactory: () => new ValidationError(`${name} must be a UUID`, name) });
}
