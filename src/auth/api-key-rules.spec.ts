import { API_KEY_NAME_MAX_LENGTH, apiKeyNameProblem } from './api-key-rules';

describe('apiKeyNameProblem (the one rule for key names)', () => {
  it.each([
    ['a short name', 'support agent'],
    ['one character', 'k'],
    ['200 characters', 'k'.repeat(API_KEY_NAME_MAX_LENGTH)],
    ['200 characters outside the BMP (400 UTF-16 units)', '🔑'.repeat(API_KEY_NAME_MAX_LENGTH)],
    ['blanks around words', '  bot  '],
  ])('accepts %s', (_, name) => {
    expect(apiKeyNameProblem(name)).toBeNull();
  });

  it.each([
    ['undefined', undefined, 'name must be a string'],
    ['a number', 5, 'name must be a string'],
    ['the empty string', '', 'name should not be empty'],
    ['only blanks', ' \t\n', 'name should not be empty'],
    ['201 characters', 'k'.repeat(201), 'name must be at most 200 characters'],
    ['U+0000', 'a\u0000b', 'name must be well-formed text without U+0000'],
    ['a lone surrogate', 'a\ud800', 'name must be well-formed text without U+0000'],
  ])('refuses %s', (_, name, message) => {
    expect(apiKeyNameProblem(name)).toBe(message);
  });
});
