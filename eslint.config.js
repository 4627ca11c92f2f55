// Lint: typescript-eslint's type-aware recommended rules over the service, the dashboard, the
// tests, the simulation and the benchmarks. Formatting is prettier's (npm run format).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['node_modules/', 'build/', 'dashboard/dist/', 'dashboard/src/schema.d.ts', 'data/', 'coverage/', 'test/artifacts/', 'docs/'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // An async function without an await still turns a throw into a rejection, and implements
      // an interface that returns a promise: both are intended here.
      '@typescript-eslint/require-await': 'off',
      // It calls necessary the assertions that pick a contextual type (a route's response map, a
      // logger method's overload), and its fix then fails to compile; tsc decides instead.
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      // Rethrowing or rejecting with what a catch caught (an `unknown`) is the point of those lines.
      '@typescript-eslint/only-throw-error': ['error', { allowThrowingUnknown: true, allowRethrowing: true }],
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Tests, the simulation and the benchmarks read HTTP answers as untyped JSON on purpose: they
    // check the wire, not the service's types.
    files: ['test/**/*.ts', 'src/**/*.test.ts', 'sim/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // A migration takes `Kysely<any>`: it must not depend on today's table types (Kysely's rule).
    files: ['src/db/migrations/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly' },
    },
  },
);
