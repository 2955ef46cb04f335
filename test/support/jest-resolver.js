// Jest (on Node 20) runs the suites as CommonJS and cannot require() an ES module, whatever the
// transform: a .mjs file (or a .js one in a "type": "module" package) is always loaded as ESM.
// preact 11 and cookie 2 ship ES modules only, so this resolver hands Jest a CommonJS copy of each of their files (compiled once by TypeScript's transpiler into the
// system temp directory). The service itself loads the originals with Node's require(esm).
const { createHash } = require('node:crypto');
const { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const ts = require('typescript');

const CACHE = join(tmpdir(), 'mss-jest-esm');
/** Packages that ship ES modules only (preact 11, cookie 2). */
const ESM_ONLY = /[\\/]node_modules[\\/](preact|cookie)[\\/].+\.m?js$/;

function commonJsCopy(path) {
  const source = readFileSync(path, 'utf8');
  const id = createHash('sha256')
    .update(path)
    .update(String(statSync(path).mtimeMs))
    .update(ts.version)
    .digest('hex')
    .slice(0, 24);
  const target = join(CACHE, `${id}.js`);
  if (!existsSync(target)) {
    const out = ts.transpileModule(source, {
      fileName: path.replace(/\.mjs$/, '.js'), // a .mjs name would keep the output ESM
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, allowJs: true, esModuleInterop: true },
    });
    mkdirSync(CACHE, { recursive: true });
    const temporary = `${target}.${process.pid}.tmp`;
    writeFileSync(temporary, out.outputText);
    renameSync(temporary, target);
  }
  return target;
}

module.exports = (request, options) => {
  // A copy's own imports ("preact") are resolved as from the project, where node_modules is.
  const from = options.basedir.startsWith(CACHE) ? { ...options, basedir: options.rootDir } : options;
  const resolved = options.defaultResolver(request, from);
  return ESM_ONLY.test(resolved) ? commonJsCopy(resolved) : resolved;
};
