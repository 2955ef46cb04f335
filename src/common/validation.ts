import { ValidationError as ClassValidationError, Type, ValidationPipe } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { ValidationError } from './errors';

/** What a body may hold: only the DTO's fields, and an unknown one is refused (not dropped). */
const VALIDATOR_OPTIONS = { whitelist: true, forbidNonWhitelisted: true } as const;

/** Flattens class-validator errors to `field.path: reason` lines; the first field is named. */
export function describeValidationErrors(errors: ClassValidationError[], parent = ''): Array<{ field: string; message: string }> {
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

/**
 * Every problem of `value` judged by a DTO's rules as the pipe judges a REST body, each with its
 * field: for a surface that reads no JSON body (a page's form) and shows each problem next to its
 * field. Empty when the value passes.
 */
export async function validationProblems(type: Type<object>, value: object): Promise<Array<{ field: string; message: string }>> {
  return describeValidationErrors(await validate(plainToInstance(type, value), VALIDATOR_OPTIONS));
}
