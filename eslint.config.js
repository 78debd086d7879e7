import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Each API family imports nothing of the other (docs/decisions.md, "Platform pieces live in `src/http/`").
const NOT_ORDERING = { group: ['**/ordering/*'], message: 'payments/ imports nothing from ordering/: move the shared piece to http/.' };
const NOT_PAYMENTS = { group: ['**/payments/*'], message: 'ordering/ imports nothing from payments/: move the shared piece to http/.' };
// Services refuse with DomainError; only the route scopes speak HTTP codes (docs/decisions.md, "Domain errors").
const NO_APP_ERROR = {
  group: ['**/http/errors.js'],
  importNames: ['AppError', 'fieldError'],
  message: 'A service throws a DomainError (shared/domain-error.ts); its route scope maps it to a code.',
};
/**
 * The HTTP edge of the two API families, which may build an AppError: the route files and the request hooks (key
 * auth, the signature check, the ordering limits, the payment API's auth). Everything else there is a service.
 */
const API_EDGE = [
  'src/ordering/*routes.ts',
  'src/ordering/auth.ts',
  'src/ordering/signing.ts',
  'src/ordering/rate-limit.ts',
  'src/payments/*routes.ts',
  'src/payments/auth.ts',
];

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'dist/', 'migrations/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        Blob: 'readonly',
        fetch: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-console': 'error',
      eqeqeq: ['error', 'always'],
    },
  },
  {
    files: ['bench/**', 'bin/**', 'src/admin/cli.ts', 'scripts/**'],
    rules: { 'no-console': 'off' },
  },
  // The runnable API clients of docs/payments.md, section 9: programs that print, on Node 20's globals.
  {
    files: ['examples/**'],
    languageOptions: { globals: { AbortSignal: 'readonly' } },
    rules: { 'no-console': 'off' },
  },
  // The two public APIs share only the platform (http/, shared/, db/): neither imports the other. A later block that
  // sets no-restricted-imports for the same file replaces these patterns, so the service blocks below repeat them.
  {
    files: ['src/payments/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NOT_ORDERING] }] },
  },
  {
    files: ['src/ordering/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NOT_PAYMENTS] }] },
  },
  // Services refuse with DomainError; only the route scopes speak HTTP codes (docs/decisions.md, "Domain errors").
  {
    files: [
      'src/audit/**',
      'src/catalog/**',
      'src/files/**',
      'src/jobs/**',
      'src/ops/**',
      'src/settings/**',
      'src/sync/**',
      'src/users/**',
      'src/webhooks/**',
    ],
    ignores: ['src/**/routes.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_APP_ERROR] }] },
  },
  {
    files: ['src/payments/**'],
    ignores: API_EDGE,
    rules: { 'no-restricted-imports': ['error', { patterns: [NOT_ORDERING, NO_APP_ERROR] }] },
  },
  {
    files: ['src/ordering/**'],
    ignores: API_EDGE,
    rules: { 'no-restricted-imports': ['error', { patterns: [NOT_PAYMENTS, NO_APP_ERROR] }] },
  },
  // A stream from an outside party that is let go early goes through discard() (src/shared/streams.ts), which listens
  // for its error first: an undici body destroyed bare emits one a tick later, and an error nobody hears ends the
  // process (docs/operations.md, "Source limits"). test/intermediary/outbound-sweep.test.ts drives every outbound
  // client against hostile answers; this catches the pattern at the line.
  {
    files: ['src/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "CallExpression[callee.property.name='destroy'][arguments.length=0]:matches([callee.object.name=/^(body|res|response)$/], [callee.object.property.name=/^(body|res|response)$/])",
          message:
            'Let an outside answer go with discard(stream) (src/shared/streams.ts): destroyed bare, an undici body emits an error that nobody listens for, and the process ends.',
        },
      ],
    },
  },
  // shared/ is a leaf: it imports packages and its own files, nothing else of the project.
  {
    files: ['src/shared/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['../*', '../**'], message: 'shared/ imports nothing from the project: return a value and let the caller choose.' },
          ],
        },
      ],
    },
  },
);
