import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';

const restrict = (files, patterns) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns }] },
});
const SERVER = { group: ['**/server/*', '**/server/**'], message: 'only src/main.ts imports the server front' };
const UWS = { group: ['uWebSockets.js'], message: 'only src/server/ imports uWebSockets.js' };
const UNDICI = { group: ['undici'], message: 'only src/upstream/ imports undici' };
const IOREDIS = { group: ['ioredis'], message: 'only src/stores/redis/ and telemetry stream code import ioredis' };

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', Buffer: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', performance: 'readonly', URL: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', structuredClone: 'readonly', queueMicrotask: 'readonly', setImmediate: 'readonly', fetch: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  { files: ['src/**/*.ts'], rules: { 'no-console': 'error' } },
  {
    // the web console: browser modules, served as they are (no build step)
    files: ['src/console/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: { document: 'readonly', window: 'readonly', location: 'readonly', sessionStorage: 'readonly', FormData: 'readonly', URLSearchParams: 'readonly', Node: 'readonly' },
    },
  },
  {
    // settings are read once, in settings.ts; main.ts only hands the environment to replica processes
    files: ['src/**/*.ts'],
    ignores: ['src/settings.ts', 'src/main.ts'],
    rules: { 'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'read GW_ settings through src/settings.ts' }] },
  },
  {
    // no circular import anywhere in src/: imports written `./x.js` resolve to the `./x.ts` source
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js'], extensionAlias: { '.js': ['.ts', '.js'] } })],
      // the imported modules are parsed too, to follow their imports
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/extensions': ['.ts', '.js'],
    },
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  restrict(['src/**/*.ts'], [SERVER, UWS, UNDICI, IOREDIS]),
  restrict(['src/server/**/*.ts'], [UNDICI, IOREDIS]),
  restrict(['src/upstream/**/*.ts'], [SERVER, UWS, IOREDIS]),
  restrict(['src/stores/redis/**/*.ts', 'src/telemetry/**/*.ts'], [SERVER, UWS, UNDICI]),
  restrict(['src/main.ts'], [UWS, UNDICI, IOREDIS]),
  {
    // the skill pool is the only place that knows threads
    files: ['src/**/*.ts'],
    ignores: ['src/skills/pool.ts'],
    // a rule of its own: a second no-restricted-imports entry would replace the folder ones above
    rules: { 'no-restricted-syntax': ['error', { selector: "ImportDeclaration[source.value='piscina'], ImportExpression[source.value='piscina']", message: 'only src/skills/pool.ts imports piscina' }] },
  },
);
