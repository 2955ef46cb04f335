import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The web app's script (/static/app.js) is TypeScript, browser/app.ts, checked against the DOM by
 * browser/tsconfig.json and linted with src/. It is bundled into one classic script:
 * - at build (`npm run build`, hence `npm run dev` and the Docker image): this file run as a
 *   program writes dist/.../static/browser/app.js, so production needs no compiler;
 * - when the service runs from its TypeScript sources (tests, ts-node), where no app.js lies beside
 *   app.ts: on first use, with the `typescript` package the sources are run with.
 * One bundler serves both, so the script served in tests is the one served in production.
 *
 * The bundle: each module transpiled (TypeScript's own transpileModule) to CommonJS and wrapped in
 * a function of a small module table, the entry run at load. Only relative imports of TypeScript
 * files are followed; anything else (a Node module, a package) is refused at build, so nothing of
 * the server's run time can slip into the page.
 */
export const BROWSER_ENTRY = 'app';

/** The served script: the built bundle beside this module, else bundled from the sources (memoized). */
export function browserScript(): string {
  bundled ??= loadBrowserScript(__dirname);
  return bundled;
}
let bundled: string | undefined;

function loadBrowserScript(folder: string): string {
  const built = join(folder, 'browser', `${BROWSER_ENTRY}.js`);
  if (existsSync(built)) return readFileSync(built, 'utf8');
  return bundleBrowserScript(join(folder, 'browser', `${BROWSER_ENTRY}.ts`));
}

/** Bundles the TypeScript entry and what it imports (relative, .ts) into one script that runs the entry. */
export function bundleBrowserScript(entry: string): string {
  // The compiler is a development dependency: loaded only to build, never by the built service.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ts = require('typescript') as typeof import('typescript');
  const root = dirname(resolve(entry));
  const modules = new Map<string, string>();
  const visit = (file: string): string => {
    const id = relative(root, file).replace(/\\/g, '/').replace(/\.ts$/, '');
    if (modules.has(id)) return id;
    modules.set(id, '');
    const output = ts.transpileModule(readFileSync(file, 'utf8'), {
      fileName: file,
      reportDiagnostics: false,
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, removeComments: true, sourceMap: false, esModuleInterop: false },
    }).outputText;
    const code = output.replace(/\brequire\("([^"]+)"\)/g, (_match, specifier: string) => {
      if (!specifier.startsWith('.')) throw new Error(`${file}: the browser script may import only relative modules, not "${specifier}"`);
      const target = resolve(dirname(file), `${specifier}.ts`);
      if (!existsSync(target)) throw new Error(`${file}: "${specifier}" is not a TypeScript module beside it`);
      return `require(${JSON.stringify(visit(target))})`;
    });
    modules.set(id, code);
    return id;
  };
  const main = visit(resolve(entry));
  const table = [...modules].map(([id, code]) => `${JSON.stringify(id)}: function (exports, require) {\n${code}\n}`).join(',\n');
  return [
    '// Built from src/web/static/browser/ (browser-script.ts): edit the TypeScript, not this file.',
    '(function () {',
    `var modules = {\n${table}\n};`,
    'var done = {};',
    'function require(id) {',
    '  if (!done[id]) { done[id] = { exports: {} }; modules[id](done[id].exports, require); }',
    '  return done[id].exports;',
    '}',
    `require(${JSON.stringify(main)});`,
    '})();',
    '',
  ].join('\n');
}

/** `node dist/src/web/static/browser-script.js <entry.ts> <out.js>`: the build step of `npm run build`. */
if (require.main === module) {
  const [entry, out] = process.argv.slice(2);
  if (!entry || !out) {
    process.stderr.write('usage: node browser-script.js <entry.ts> <out.js>\n');
    process.exit(2);
  }
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, bundleBrowserScript(entry));
}
