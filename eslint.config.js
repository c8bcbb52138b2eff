// Lint: eslint's and typescript-eslint's recommended rules, the type-checked rules about
// promises, and the layering of docs/architecture.md ("Modules and what each may import").
// Formatting is prettier's (.prettierrc.json).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const ADAPTERS = ['http', 'admin', 'store', 'dns', 'auth', 'metrics', 'gateway'];

/** Libraries that do I/O: never in src/core or src/app (they reach the world through ports). */
const IO_MODULES = [
  ...['fs', 'fs/promises', 'http', 'https', 'http2', 'tls', 'dgram', 'dns', 'dns/promises', 'child_process']
    .concat(['cluster', 'worker_threads', 'os', 'readline'])
    .flatMap((m) => [m, `node:${m}`]),
  'ioredis',
  'prom-client',
  'dns-packet',
];

/** Folders of src/ (import paths containing `/<name>/`), as no-restricted-imports groups. */
const folders = (names) => names.map((n) => `**/${n}/**`);

/** Nothing in src/ imports the benchmark or the tests. */
const OUTSIDE_PRODUCT = { group: ['**/bench/**', '**/test/**'], message: 'src/ never imports bench/ or test/.' };

const layer = (files, forbidden, message, ioMessage) => ({
  files,
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [...(forbidden.length ? [{ group: folders(forbidden), message }] : []), OUTSIDE_PRODUCT],
        paths: ioMessage
          ? [
              ...IO_MODULES.map((name) => ({ name, message: ioMessage })),
              // node:net's address predicates are pure; its sockets are not.
              ...['net', 'node:net'].map((name) => ({
                name,
                allowImportNames: ['isIP', 'isIPv4', 'isIPv6'],
                message: ioMessage,
              })),
            ]
          : [],
      },
    ],
  },
});

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly' } },
    rules: {
      // Unused arguments are part of an interface's shape; a leading _ marks them.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // prettier wraps code at 120 columns; this holds comments to it too (strings may run on).
      'max-len': [
        'error',
        { code: 120, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true },
      ],
    },
  },
  {
    // Type-checked: a promise nobody awaits or catches ends the process on node 20 when it rejects.
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-for-in-array': 'error',
      '@typescript-eslint/prefer-promise-reject-errors': 'error',
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
    },
  },
  // The layering (docs/architecture.md). Each folder may import only what its row allows.
  layer(
    ['src/core/**'],
    ['app', ...ADAPTERS, 'config', 'lab', 'cli'],
    'src/core imports nothing of ours.',
    'src/core does no I/O.',
  ),
  layer(
    ['src/app/**'],
    [...ADAPTERS, 'config', 'lab', 'cli'],
    'src/app imports only src/core (adapters via ports).',
    'src/app reaches the world through its ports.',
  ),
  ...ADAPTERS.map((adapter) =>
    layer(
      [`src/${adapter}/**`],
      [...ADAPTERS.filter((a) => a !== adapter), 'lab', 'cli'],
      'Adapters never import each other; src/cli wires them.',
    ),
  ),
  layer(['src/config/**'], ['app', ...ADAPTERS, 'lab', 'cli'], 'src/config imports only src/core.'),
  layer(['src/lab/**'], ['app', ...ADAPTERS, 'cli'], 'src/lab imports only src/core and src/config.'),
  layer(['src/cli/**'], [], ''),
);
