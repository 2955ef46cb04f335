import { ValidationError } from '../common/errors';
import { argumentCheck } from './tool-arguments';

const schema = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    scope: {
      type: 'object',
      properties: { lines: { type: 'array', items: { type: 'string', format: 'uuid' } } },
      required: ['lines'],
      additionalProperties: false,
    },
  },
  required: ['id'],
  additionalProperties: false,
} as const;

const check = argumentCheck(schema);
const ID = '0b9d6c1e-6f7a-4c55-9a53-1f5c2a3b4d5e';

function refusal(args: Record<string, unknown>): { message: string; field?: string } {
  try {
    check(args);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return { message: (error as ValidationError).message, field: (error as ValidationError).field };
  }
  throw new Error('the arguments were accepted');
}

describe('argumentCheck', () => {
  it('answers arguments the schema accepts, as given', () => {
    expect(check({ id: ID, scope: { lines: [ID] } })).toEqual({ id: ID, scope: { lines: [ID] } });
  });

  it('refuses with the tool message, the top-level argument as the field', () => {
    expect(refusal({ id: 'not-a-uuid' })).toEqual({ message: 'id must match format "uuid"', field: 'id' });
    expect(refusal({ id: ID, scope: { lines: ['x'] } })).toEqual({ message: 'scope.lines[0] must match format "uuid"', field: 'scope' });
    expect(refusal({})).toEqual({ message: 'id is required', field: 'id' });
    expect(refusal({ id: ID, extra: 1 })).toEqual({ message: 'extra is not a known argument', field: undefined });
  });

  it('does not coerce types', () => {
    expect(refusal({ id: 7 })).toEqual({ message: 'id must be string', field: 'id' });
  });
});
