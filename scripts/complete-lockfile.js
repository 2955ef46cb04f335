#!/usr/bin/env node
/*
 * Adds the lockfile entries npm leaves out for optional dependencies it could not fetch, so that
 * `npm ci` accepts the lockfile (npm/cli#9846: npm ci rejects a lockfile just written by npm
 * install when an optional dependency was unavailable, "Missing: <name>@ from lock file").
 *
 * It happens here with platform builds (e.g. @unrs/resolver-binding-darwin-x64, needed by jest's
 * resolver on macOS) that the package registry this machine reaches does not serve. Each missing
 * optional dependency gets an entry with the exact version its dependent asks for; `npm ci` then
 * installs it where the registry has it and the platform matches, and skips it otherwise, as for
 * any optional dependency.
 *
 * Runs as `postinstall` (after npm has written package-lock.json); idempotent; changes nothing
 * when the lockfile is already complete. Usage: node scripts/complete-lockfile.js [lockfile]
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const file = path.resolve(process.argv[2] || path.join(__dirname, '..', 'package-lock.json'));
if (!fs.existsSync(file)) process.exit(0);
const text = fs.readFileSync(file, 'utf8');
const lock = JSON.parse(text);
const packages = lock.packages || {};

/** Where Node would find `name` from the package at `location` (walking up node_modules). */
function resolves(location, name) {
  let dir = location;
  for (;;) {
    if (packages[`${dir ? `${dir}/` : ''}node_modules/${name}`]) return true;
    if (!dir) return false;
    const cut = dir.lastIndexOf('/node_modules/');
    dir = cut === -1 ? '' : dir.slice(0, cut);
  }
}

const added = [];
for (const [location, pkg] of Object.entries({ ...packages })) {
  for (const [name, spec] of Object.entries(pkg.optionalDependencies || {})) {
    if (resolves(location, name)) continue;
    if (!/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(spec)) continue; // only exact versions can be pinned safely
    const entry = { version: spec };
    if (pkg.dev) entry.dev = true;
    entry.optional = true;
    packages[`node_modules/${name}`] = entry;
    added.push(`${name}@${spec}`);
  }
}

if (added.length) {
  lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => a.localeCompare(b, 'en'))); // npm's order
  fs.writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
  process.stdout.write(`complete-lockfile: added ${added.length} optional entr${added.length === 1 ? 'y' : 'ies'} to ${path.basename(file)}\n`);
}
