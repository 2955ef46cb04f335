import { PipeTransform } from '@nestjs/common';
import { ValidationError } from './errors';
import { isUuid } from './uuid';

/** A path id that must be a UUID; anything else is a 400 naming the parameter. */
export function UuidParam(name: string): PipeTransform<unknown, string> {
  return {
    transform(value: unknown): string {
      if (!isUuid(value)) throw new ValidationError(`${name} must be a UUID`, name);
      return value;
    },
  };
}
