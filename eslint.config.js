// `npm run lint`: ESLint over the whole repository, TypeScript and Svelte, with type information.
// Why these rule sets:
// - typescript-eslint's type-checked recommended set: a promise nobody awaits or catches is how a
//   queue loses an outcome write or crashes a worker on an unhandled rejection
//   (no-floating-promises, no-misused-promises), and the no-unsafe-* rules keep `any` (an untyped
//   SQL row, an unchecked JSON body) from spreading silently.
// - switch-exhaustiveness-check: job statuses and event types are unions; a new member must be
//   handled wherever they are switched on.
// - consistent-type-imports: type-only imports are erased, so the board can import the server's
//   API types without pulling server code into the bundle (web/ compiles with
//   verbatimModuleSyntax, which requires it).
// - eslint-plugin-svelte's recommended set for the board's components and rune modules.
// Left out: require-await (an `async` function without `await` is how a task handler or an
// interface method turns a throw into a rejection, on purpose), and in tests the no-unsafe-*
// rules (a test reads `await res.json()` untyped; its assertions are the check).
import js from '@eslint/js';
import svelte from 'eslint-plugin-svelte';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'web/dist/', 'dist/', '.herald/', 'test-artifacts/', 'drizzle/meta/'] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  svelte.configs.recommended,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: {
        // Each file is checked with the tsconfig that owns it (the root one, or web/'s).
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
        extraFileExtensions: ['.svelte'],
      },
    },
    rules: {
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      '@typescript-eslint/require-await': 'off',
      // Passing on a caught error or an abort reason as it came is fine; rejecting with a string is not.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      eqeqeq: ['error', 'smart'],
    },
  },
  {
    // Plain JavaScript (the bin shims, configs, task fixtures) sits in no tsconfig: syntax rules only.
    files: ['**/*.{js,mjs,cjs}'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    files: ['**/*.test.ts', 'test/**'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    files: ['web/src/**/*.ts', 'web/src/**/*.svelte'],
    languageOptions: {
      globals: { ...globals.browser },
      parserOptions: { parser: tseslint.parser },
    },
  },
  {
    // The SQL is the core's: outside queue/, code goes through its services, so a statement's
    // callers are all in one place. Two exceptions run the statements themselves: the claim-plan
    // check EXPLAINs the claim, for queue/ and the system suite alike, and the claim-levers bench
    // prices the claim and the outcome against variants of them.
    files: ['{worker,server,client,bench,test,bin,web}/**/*.{ts,svelte}'],
    ignores: ['test/support/claim-plan.ts', 'bench/claim-levers.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/queue/sql/*'], message: 'use the core (queue/) instead of its SQL' }] }],
    },
  },
);
