import { ValidationError as ClassValidationError, ValidationPipe } from '@nestjs/common';
import { ValidationError } from './errors';

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
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    exceptionFactory: (errors) => {
      const problems = describeValidationErrors(errors);
      return new ValidationError(problems.map((p) => p.message).join('; '), problems[0]?.field);
    },
  });
}
