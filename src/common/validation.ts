import { ValidationError as ClassValidationError, Type, ValidationPipe } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { ValidationError } from './errors';

/** What a body may hold: only the DTO's fields, and an unknown one is refused (not dropped). */
const VALIDATOR_OPTIONS = { whitelist: true, forbidNonWhitelisted: true } as const;

/** Flattens class-validator errors to `field.path: reason` lines; the first field is named. */
export function describeValidationErrors(errors: ClassValidationError[], parent = ''): Problem[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.values(error.constraints ?? {}).map((message) => ({
      field,
      message: message.startsWith(error.property) ? `${field}${message.slice(error.property.length)}` : `${field}: ${message}`,
    }));
    return [...own, ...describeValidationErrors(error.children ?? [], field)];
  });
}

/** Whitelisting validation for every REST body: unknown fields and wrong types are a 400 naming the field. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    ...VALIDATOR_OPTIONS,
    transform: true,
    exceptionFactory: (errors) => {
      const problems = describeValidationErrors(errors);
      return new ValidationError(problems.map((p) => p.message).join('; '), problems[0]?.field);
    },
  });
}

/** A problem of a value with the field it is about. */
export interface Problem {
  field: string;
  message: string;
}

/** A value judged by a DTO's rules: the DTO when it passes, otherwise every problem. */
export type Judged<T> = { value: T } | { problems: Problem[] };

/**
 * `value` judged by a DTO's rules as the pipe judges a REST body: for a surface that reads no JSON
 * body (a page's form), which shows each problem next to its field. When it passes, the DTO
 * instance: the typed input of the service the DTO is for.
 */
export async function validateAs<T extends object>(type: Type<T>, value: object): Promise<Judged<T>> {
  const instance = plainToInstance(type, value);
  const problems = describeValidationErrors(await validate(instance, VALIDATOR_OPTIONS));
  return problems.length > 0 ? { problems } : { value: instance };
}
