import { Type } from 'class-transformer';
import { IsIn, IsInt, IsString, Min, ValidateNested, ValidationError as ClassValidationError } from 'class-validator';
import { ArgumentMetadata } from '@nestjs/common';
import { ValidationError } from './errors';
import { createValidationPipe, describeValidationErrors, validateAs } from './validation';

function classError(property: string, constraints?: Record<string, string>, children: ClassValidationError[] = []): ClassValidationError {
  const error = new ClassValidationError();
  error.property = property;
  error.constraints = constraints;
  error.children = children;
  return error;
}

describe('describeValidationErrors', () => {
  it('names the field of each broken constraint', () => {
    expect(describeValidationErrors([classError('tier', { isIn: 'tier must be one of the following values: STARTER, PRO, POWER' })])).toEqual([
      { field: 'tier', message: 'tier must be one of the following values: STARTER, PRO, POWER' },
    ]);
  });

  it('gives every constraint of a field its own entry', () => {
    const result = describeValidationErrors([classError('name', { isString: 'name must be a string', isNotEmpty: 'name should not be empty' })]);
    expect(result).toEqual([
      { field: 'name', message: 'name must be a string' },
      { field: 'name', message: 'name should not be empty' },
    ]);
  });

  it('prefixes a message that does not start with the property name', () => {
    expect(describeValidationErrors([classError('plan', { whitelistValidation: 'property plan should not exist' })])).toEqual([
      { field: 'plan', message: 'plan: property plan should not exist' },
    ]);
  });

  it('writes nested fields as dotted paths, rewriting the leading property name', () => {
    const errors = [
      classError('channelAccess', undefined, [
        classError('mode', { isIn: 'mode must be one of the following values: ALL, LINES' }),
        classError('lines', { onlyWithLinesMode: 'lines is only allowed with mode LINES' }),
        classError('filters', undefined, [classError('0', { isString: 'each value must be a string' })]),
      ]),
      classError('name', { isString: 'name must be a string' }),
    ];
    expect(describeValidationErrors(errors)).toEqual([
      { field: 'channelAccess.mode', message: 'channelAccess.mode must be one of the following values: ALL, LINES' },
      { field: 'channelAccess.lines', message: 'channelAccess.lines is only allowed with mode LINES' },
      { field: 'channelAccess.filters.0', message: 'channelAccess.filters.0: each value must be a string' },
      { field: 'name', message: 'name must be a string' },
    ]);
  });

  it('is empty for no errors and for an error with neither constraints nor children', () => {
    expect(describeValidationErrors([])).toEqual([]);
    expect(describeValidationErrors([classError('x')])).toEqual([]);
  });
});

class Inner {
  @IsIn(['A', 'B'])
  kind: string;
}

class Outer {
  @IsString()
  name: string;

  @IsInt()
  @Min(1)
  count: number;

  @ValidateNested()
  @Type(() => Inner)
  inner: Inner;
}

describe('createValidationPipe', () => {
  const pipe = createValidationPipe();
  const meta: ArgumentMetadata = { type: 'body', metatype: Outer };

  it('passes a valid body through as an instance', async () => {
    const value = await pipe.transform({ name: 'n', count: 2, inner: { kind: 'A' } }, meta);
    expect(value).toBeInstanceOf(Outer);
    expect(value).toEqual({ name: 'n', count: 2, inner: { kind: 'A' } });
  });

  it('throws a domain ValidationError naming the first bad field and listing every problem', async () => {
    const error = await pipe.transform({ name: 1, count: 0, inner: { kind: 'C' } }, meta).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe('name');
    expect((error as ValidationError).message).toBe(
      'name must be a string; count must not be less than 1; inner.kind must be one of the following values: A, B',
    );
  });

  it('refuses unknown fields, top-level and nested, naming them', async () => {
    const top = await pipe.transform({ name: 'n', count: 1, inner: { kind: 'A' }, extra: 1 }, meta).catch((e: ValidationError) => e);
    expect(top).toMatchObject({ code: 'VALIDATION', field: 'extra', message: 'extra: property extra should not exist' });
    const nested = await pipe.transform({ name: 'n', count: 1, inner: { kind: 'A', deep: true } }, meta).catch((e: ValidationError) => e);
    expect(nested).toMatchObject({ field: 'inner.deep', message: 'inner.deep: property deep should not exist' });
  });

  it('does not convert types implicitly', async () => {
    const error = await pipe.transform({ name: 'n', count: '3', inner: { kind: 'A' } }, meta).catch((e: ValidationError) => e);
    expect(error).toMatchObject({ field: 'count' });
  });
});

describe('validateAs', () => {
  it('answers the DTO, typed, for a value the pipe accepts', async () => {
    const judged = await validateAs(Outer, { name: 'n', count: 2, inner: { kind: 'A' } });
    expect(judged).toEqual({ value: { name: 'n', count: 2, inner: { kind: 'A' } } });
    expect('value' in judged && judged.value).toBeInstanceOf(Outer);
  });

  it('lists every problem with its own field, nested and unknown fields too, as the pipe words them', async () => {
    expect(await validateAs(Outer, { name: 'n', count: 0, inner: { kind: 'C', deep: true } })).toEqual({
      problems: [
        { field: 'count', message: 'count must not be less than 1' },
        { field: 'inner.deep', message: 'inner.deep: property deep should not exist' },
        { field: 'inner.kind', message: 'inner.kind must be one of the following values: A, B' },
      ],
    });
  });
});
