import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Each API family imports nothing of the other (docs/decisions.md, "Platform pieces live in `src/http/`").
const NOT_ORDERING = {
  group: ['**/ordering/*', '**/reseller-auth/*'],
  message: 'payments/ imports nothing from ordering/: move the shared piece to http/.',
};
const NOT_PAYMENTS = { group: ['**/payments/*'], message: 'ordering/ imports nothing from payments/: move the shared piece to http/.' };
// Services refuse with DomainError; only the route scopes speak HTTP codes (docs/decisions.md, "Domain errors").
const NO_APP_ERROR = {
  group: ['**/http/errors.js'],
  importNames: ['AppError', 'fieldError'],
  message: 'A service throws a DomainError (shared/domain-error.ts); its route scope maps it to a code.',
};
/** A package's name (scoped or not) and a slash: not a relative path, an absolute one, `node:` or a `#` import. */
const PACKAGE_SLASH = '^(?!node:)(?:@[^/]+/[^/]+|[^./@#][^/]*)/';
/**
 * Packages are used through their documented entry points (docs/decisions.md, "Public library APIs only"): a file
 * under a package's lib/, dist/, src/, build/ or internal/ can change in any release. Relative imports, `node:` and
 * public subpaths (`drizzle-orm/pg-core`, `undici/types`, `tsx/esm/api`) do not match. Every block below that sets
 * no-restricted-imports repeats it, as a later block's patterns replace an earlier one's.
 */
const PACKAGE_PRIVATE = `${PACKAGE_SLASH}(?:[^/]+/)*(?:lib|dist|src|build|internal)(?:/|$)`;
const PACKAGE_INTERNALS = { regex: PACKAGE_PRIVATE, message: "A package's private file: use its public API (docs/decisions.md)." };
/**
 * The same for require(), require.resolve() and import() (esquery's regexes cannot hold a slash: \x2F is one). A later
 * block that sets no-restricted-syntax replaces these too, so it spreads NO_REQUIRE_BY_PATH into its own list.
 */
const esqueryRegex = (source) => `/${source.replaceAll('/', '\\x2F')}/`;
const PRIVATE_SPECIFIER = esqueryRegex(PACKAGE_PRIVATE);
const PACKAGE_SUBPATH = esqueryRegex(PACKAGE_SLASH);
const NO_REQUIRE_BY_PATH = [
  {
    // ESM code imports a package's public subpaths; createRequire of a subpath reaches a CommonJS file it does not export.
    selector: `CallExpression[callee.name='require'][arguments.0.value=${PACKAGE_SUBPATH}]`,
    message: "require() of a package's file by path: import its public API (docs/decisions.md).",
  },
  {
    selector: `CallExpression[callee.property.name='resolve'][arguments.0.value=${PRIVATE_SPECIFIER}]`,
    message: "A package's private file: use its public API (docs/decisions.md).",
  },
  {
    selector: `ImportExpression[source.value=${PRIVATE_SPECIFIER}]`,
    message: "A package's private file: use its public API (docs/decisions.md).",
  },
];

/**
 * The HTTP edge of the two API families, which may build an AppError: the route files and the request hooks (key
 * auth and the signature check live in src/reseller-auth/, the ordering limits, the payment API's auth). Everything
 * else there is a service.
 */
const API_EDGE = ['src/ordering/*routes.ts', 'src/ordering/rate-limit.ts', 'src/payments/*routes.ts', 'src/payments/auth.ts'];

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
      'no-restricted-imports': ['error', { patterns: [PACKAGE_INTERNALS] }],
      'no-restricted-syntax': ['error', ...NO_REQUIRE_BY_PATH],
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
    rules: { 'no-restricted-imports': ['error', { patterns: [NOT_ORDERING, PACKAGE_INTERNALS] }] },
  },
  {
    files: ['src/ordering/**', 'src/reseller-auth/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NOT_PAYMENTS, PACKAGE_INTERNALS] }] },
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
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_APP_ERROR, PACKAGE_INTERNALS] }] },
  },
  {
    files: ['src/payments/**'],
    ignores: API_EDGE,
    rules: { 'no-restricted-imports': ['error', { patterns: [NOT_ORDERING, NO_APP_ERROR, PACKAGE_INTERNALS] }] },
  },
  {
    files: ['src/ordering/**'],
    ignores: API_EDGE,
    rules: { 'no-restricted-imports': ['error', { patterns: [NOT_PAYMENTS, NO_APP_ERROR, PACKAGE_INTERNALS] }] },
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
        ...NO_REQUIRE_BY_PATH,
        {
          selector:
            "CallExpression[callee.property.name='destroy'][arguments.length=0]:matches([callee.object.name=/^(body|res|response)$/], [callee.object.property.name=/^(body|res|response)$/])",
          message:
            'Let an outside answer go with discard(stream) (src/shared/streams.ts): destroyed bare, an undici body emits an error that nobody listens for, and the process ends.',
        },
      ],
    },
  },
  // http/ is the platform both APIs stand on, and knows no database: a database's error is told by shared/db-errors.ts
  // (docs/decisions.md, "Platform pieces live in `src/http/`").
  {
    files: ['src/http/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/db/*', '**/db/**'], message: 'http/ imports nothing from db/: move the shared piece to shared/.' },
            PACKAGE_INTERNALS,
          ],
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
            PACKAGE_INTERNALS,
          ],
        },
      ],
    },
  },
);
