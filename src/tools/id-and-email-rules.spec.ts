import { validateSync } from 'class-validator';
import { IsEmailAddress, isEmailAddress } from '../common/email-address';
import { ValidationError } from '../common/errors';
import { argumentCheck } from './tool-arguments';
import { IsUuid, isUuid, LOWERCASE_UUID_PATTERN } from '../common/uuid';
import { UuidParam } from '../common/uuid-param';

const ID = '0b9d6c1e-6f7a-4c55-9a53-1f5c2a3b4d5e';
const IDS = [ID, ID.toUpperCase(), '00000000-0000-0000-0000-000000000000'];
const NOT_IDS = ['', 'x', `urn:uuid:${ID}`, `${ID} `, ID.slice(1), ID.replace(/-/g, ''), `{${ID}}`, 42, null];
const ADDRESSES = ['ada@example.com', 'Ada.Lovelace+inbox@mail.example.co.uk'];
const NOT_ADDRESSES = [
  '',
  'ada',
  'ada@',
  '@example.com',
  'ada@localhost',
  'ada@example',
  'Ada <ada@example.com>',
  `${'a'.repeat(65)}@example.com`,
  7,
  // Quoted local parts validator.js would take: a header line, a second recipient, a space (review of issue 44).
  '"a\r\nBcc: x@evil.example"@partner.example',
  '"victim@evil.example,"@partner.example',
  '"a b"@partner.example',
];

class Dto {
  @IsUuid({ message: 'threadId must be a UUID' })
  threadId: unknown;

  @IsEmailAddress()
  email: unknown;
}

function messages(threadId: unknown, email: unknown): string[] {
  return validateSync(Object.assign(new Dto(), { threadId, email })).flatMap((error) => Object.values(error.constraints ?? {}));
}

describe('the one id rule and the one email rule, in every dialect', () => {
  const tool = argumentCheck({
    type: 'object',
    properties: { id: { type: 'string', format: 'uuid' }, to: { type: 'string', format: 'email' } },
    additionalProperties: false,
  } as const);
  const refusal = (args: Record<string, unknown>): string | undefined => {
    try {
      tool(args);
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  };

  it.each(IDS)('accepts the id %s in the hand check, the tool schema, the DTO and the path parameter', (id) => {
    expect(isUuid(id)).toBe(true);
    expect(refusal({ id })).toBeUndefined();
    expect(messages(id, 'ada@example.com')).toEqual([]);
    expect(UuidParam('orgId').transform(id, { type: 'param' })).toBe(id);
  });

  it.each(NOT_IDS)('refuses %p everywhere, each dialect with its own message', (id) => {
    expect(isUuid(id)).toBe(false);
    if (typeof id === 'string') expect(refusal({ id })).toBe('id must match format "uuid"');
    expect(messages(id, 'ada@example.com')).toEqual(['threadId must be a UUID']);
    expect(() => UuidParam('orgId').transform(id, { type: 'param' })).toThrow(new ValidationError('orgId must be a UUID', 'orgId'));
  });

  it('reads ids inside tokens the service minted in lowercase only', () => {
    expect(LOWERCASE_UUID_PATTERN.test(ID)).toBe(true);
    expect(LOWERCASE_UUID_PATTERN.test(ID.toUpperCase())).toBe(false);
  });

  it.each(ADDRESSES)('accepts the address %s in the hand check, the tool schema and the DTO', (address) => {
    expect(isEmailAddress(address)).toBe(true);
    expect(refusal({ to: address })).toBeUndefined();
    expect(messages(ID, address)).toEqual([]);
  });

  it.each(NOT_ADDRESSES)("refuses the address %p everywhere, with @IsEmail()'s message in a DTO", (address) => {
    expect(isEmailAddress(address)).toBe(false);
    if (typeof address === 'string') expect(refusal({ to: address })).toBe('to must match format "email"');
    expect(messages(ID, address)).toEqual(['email must be an email']);
  });
});
