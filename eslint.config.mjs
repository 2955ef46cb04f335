// Lint: typescript-eslint's recommended rules, Prettier owns formatting, and the import boundaries
// between features (docs/decisions.md, "Code layout and boundaries") fail CI.
import eslint from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/** Feature folders under src/: each owns its rules; the shared layers below import none of them. */
const FEATURES = ['accounts', 'admin', 'delivery', 'events', 'health', 'messaging', 'oauth', 'seed', 'web', 'webhooks'];

/** `no-restricted-imports` patterns that forbid importing the given src/ folders from anywhere below src/. */
function forbid(folders, why) {
  return folders.map((folder) => ({ group: [`**/${folder}/*`, `**/${folder}`], message: `${why} (imports ${folder}/)` }));
}

export default tseslint.config(
  { ignores: ['dist/**', 'coverage/**', 'node_modules/**', 'test/conformance/**', 'docs/**', '**/*.js', '**/*.mjs'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  importX.flatConfigs.typescript,
  {
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: 'tsconfig.json' })] },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Tests and scripts read JSON answers whose shape is what they check: `any` is allowed there.
    files: ['test/**/*.ts', 'scripts/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['src/messaging/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: forbid(['delivery'], 'messaging/ and delivery/ never import each other: events go through the outbox') }],
    },
  },
  {
    files: ['src/delivery/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: forbid(['messaging'], 'messaging/ and delivery/ never import each other: events go through the outbox') }],
    },
  },
  {
    files: ['src/mcp/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: forbid(FEATURES, 'mcp/ is the protocol: features register tools with it, it imports none of them') }],
    },
  },
  {
    // SQL lives in repositories (docs/decisions.md, "SQL"); the two statements that test connections stay where they are.
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.repository.ts', 'src/**/*.sql.ts', 'src/database/**', 'src/**/*.spec.ts', 'src/health/database-probe.ts', 'src/events/outbox-relay.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.property.name='query']",
          message: 'SQL belongs in a *.repository.ts of the feature (docs/decisions.md, "SQL"), not in a service.',
        },
        {
          selector: "CallExpression[callee.name='queryNamed']",
          message: 'SQL belongs in a *.repository.ts of the feature (docs/decisions.md, "SQL"), not in a service.',
        },
      ],
    },
  },
  {
    files: ['src/config/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: forbid([...FEATURES, 'mcp', 'auth', 'limits'], 'config/ reads the environment and imports no feature') }],
    },
  },
  prettier,
);
