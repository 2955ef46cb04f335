import { validate } from 'class-validator';
import { CreateApiKeyDto } from './admin.dto';

/** The admin API's DTOs apply the features' rules (auth/api-key-rules.ts), with their messages. */
describe('CreateApiKeyDto', () => {
  it('applies the one rule for key names (apiKeyNameProblem), with the same message', async () => {
    const dto = Object.assign(new CreateApiKeyDto(), { name: 'k'.repeat(201) });
    const [error] = await validate(dto);
    expect(error.property).toBe('name');
    expect(Object.values(error.constraints!)).toEqual(['name must be at most 200 characters']);
  });
});
