// Lint: typescript-eslint's recommended rules, Prettier owns formatting, and the import boundaries
// between features (docs/decisions.md, "Code layout and boundaries") fail CI.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import eslint from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/** Feature folders under src/: each owns one capability, its tables, services and tools. */
const FEATURES = ['accounts', 'agents', 'attachments', 'channels', 'conversations', 'delivery', 'events', 'oauth', 'opt-outs', 'webhooks'];
/** The surfaces people and agents reach the features through: they import features, never the reverse. */
const SURFACES = ['mcp', 'admin', 'web'];
/** The kernel: configuration, shared helpers, the data source and the queue. It imports nothing above it. */
const KERNEL = ['config', 'common', 'database', 'queue'];
/** Every folder directly under src/, read from the tree, so that a folder added later falls under the floors below. */
const SRC = fileURLToPath(new URL('./src', import.meta.url));
const SRC_FOLDERS = readdirSync(SRC, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);
/** What publishes conversation events; delivery reads them from the event bus only. */
const MESSAGING = ['conversations', 'channels', 'attachments', 'agents'];

/** `no-restricted-imports` patterns that forbid importing the given src/ folders from anywhere below src/. */
function forbid(folders, why) {
  return folders.map((folder) => {
    const at = folder.startsWith('../') ? folder : `**/${folder}`; // '../x': a sibling folder named relatively
    const message = `${why} (imports ${folder.replace(/^\.\.\//, '')}/)`;
    return { group: [`${at}/*`, at], message };
  });
}

const NO_SURFACE = [SURFACES, 'features never import a surface (mcp/, admin/, web/): surfaces import features'];
const NO_DELIVERY = [['delivery'], 'events reach delivery through the outbox: what publishes them never imports delivery/'];

/**
 * One lint block per folder group: `files` may import none of the folders of each [folders, why]
 * rule (docs/decisions.md, "Code layout and boundaries"). ESLint applies one
 * `no-restricted-imports` per file (the last block wins), so every folder is in exactly one block.
 */
function boundary(files, ...rules) {
  const patterns = rules.flatMap(([folders, why]) => forbid(folders, why));
  return { files: files.map((f) => `src/${f}/**/*.{ts,tsx}`), rules: { 'no-restricted-imports': ['error', { patterns }] } };
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
  boundary(['conversations'], NO_SURFACE, NO_DELIVERY, [
    ['channels', 'attachments', 'agents'],
    'conversations know no provider: channels and attachments register with it (OutboundChannels, InboundAttachments)',
  ]),
  // A sibling channel is also reached as ../sms or ../email from inside channels/.
  boundary(
    ['channels/sms'],
    NO_SURFACE,
    NO_DELIVERY,
    [['channels/email', '../email'], 'a channel feeds conversations and imports no other channel'],
    [['attachments', 'agents'], 'channels feed conversations only'],
  ),
  boundary(
    ['channels/email'],
    NO_SURFACE,
    NO_DELIVERY,
    [['channels/sms', '../sms'], 'a channel feeds conversations and imports no other channel'],
    [['attachments', 'agents'], 'channels feed conversations only'],
  ),
  boundary(['attachments', 'agents'], NO_SURFACE, NO_DELIVERY, [['channels'], 'attachments and agents build on conversations, never on a channel']),
  boundary(['delivery'], NO_SURFACE, [MESSAGING, 'delivery reads events from the outbox, never the code that published them']),
  boundary(['accounts', 'events', 'webhooks', 'oauth'], NO_SURFACE),
  boundary(['opt-outs'], NO_SURFACE, NO_DELIVERY, [
    ['conversations', 'channels', 'attachments', 'agents'],
    "opt-outs sit under conversations (the send gate asks them) and know no channel: the SMS channel applies the keywords",
  ]),
  boundary(['auth'], NO_SURFACE, [
    FEATURES.filter((f) => f !== 'accounts'),
    'auth/ resolves callers from the accounts it authenticates and imports no other feature',
  ]),
  // The floors (docs/decisions.md, "One identity room"): the kernel, then identity, then the tool kit, then the features.
  boundary(
    ['common', 'limits', 'queue'],
    [[...SURFACES, ...FEATURES, 'identity', 'auth', 'tools'], 'the kernel imports nothing above it: no identity, no tool kit, no feature, no surface'],
  ),
  boundary(['ops', 'health', 'outbound-http'], [[...SURFACES, ...FEATURES], 'shared layers import no feature and no surface']),
  boundary(
    ['identity'],
    [
      [...SURFACES, ...FEATURES, 'auth', 'tools'],
      'identity sits on the kernel and under the features: it imports no feature, no surface, not auth/ (the ways in, which resolve into it) and not the tool kit',
    ],
  ),
  boundary(['tools'], [[...SURFACES, ...FEATURES, 'auth'], 'the tool kit sits on identity and under the features that declare tools with it']),
  boundary(['mcp'], [FEATURES, 'mcp/ is the protocol: features register their tools with it (tools/), it imports none of them']),
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
        {
          // A response that closed before the listener was added never calls it: what it would give back stays taken.
          selector: "CallExpression[callee.property.name=/^(on|once|addListener)$/][callee.object.name=/^(res|response)$/][arguments.0.value='close']",
          message: 'Use whenResponseCloses (src/common/response-close.ts): it also answers a response that closed already (a client gone during an await).',
        },
      ],
    },
  },
  {
    // config/ reads the environment and assembles the features' slices (docs/configuration.md): of a feature it imports only its *.config.ts.
    files: ['src/config/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^\\.\\./(?!.*\\.config$)', message: "config/ imports no feature, only features' *.config.ts slices" }] },
      ],
    },
  },
  {
    // A feature's slice imports nothing but the mechanism in config/, so assembling the configuration loads no feature.
    // Last of the no-restricted-imports blocks: for a *.config.ts it replaces its folder's boundaries with this stricter one.
    files: ['src/**/*.config.ts'],
    ignores: ['src/config/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(?!(\\.\\./)+config/)', message: 'a *.config.ts imports nothing but src/config/ (the settings mechanism)' }] },
      ],
    },
  },
  {
    // The floors of issue 44, on resolved paths (so a subfolder that shares a name with a top-level folder is not mistaken for it).
    // One block for every zone: ESLint applies one import-x/no-restricted-paths per file (the last block wins).
    files: ['src/**/*.{ts,tsx}'],
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            {
              // The kernel imports nothing above it. config/ is held by its own rule above (it assembles the features' *.config.ts slices, which import only config/).
              target: KERNEL.filter((f) => f !== 'config').map((f) => `./src/${f}`),
              from: './src',
              except: KERNEL.map((f) => `./${f}`),
              message: 'The kernel (config, common, database, queue) imports nothing above it.',
            },
            {
              // Features (and every other folder but the surfaces) import no surface; config/ reads the surfaces' *.config.ts slices only (its own rule above).
              target: SRC_FOLDERS.filter((f) => !SURFACES.includes(f) && f !== 'config').map((f) => `./src/${f}`),
              from: SURFACES.map((f) => `./src/${f}`),
              message: 'Features import no surface (mcp/, admin/, web/): surfaces import features.',
            },
            // ── identity imports no feature ───────────────────────────────────────────────────────────
            // src/identity/ (issue 44: who acts and on which lines) sits above the kernel and below the
            // features. The zone applies as soon as the folder exists; a feature folder that moves into
            // identity/ leaves FEATURES (and so this list) with it.
            {
              target: './src/identity',
              from: [...FEATURES, ...SURFACES].map((f) => `./src/${f}`),
              message: 'identity/ imports no feature and no surface: features build on identity.',
            },
          ],
        },
      ],
    },
  },
  prettier,
);
