#!/usr/bin/env node
/*
 * Fails when a package in package-lock.json does not accept every Node.js line the project's
 * `engines` promises (docs/decisions.md, "Stack and versions"): such a package makes `npm ci`
 * print EBADENGINE warnings on a supported Node, and may not run there. Each alternative of the
 * range (`^20.19.0 || ^22.13.0 || ...`) is checked at its lowest version.
 *
 * Run by `npm run lint`. Usage: node scripts/check-engines.js [package.json] [lockfile]
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const semver = require('semver');

const root = path.join(__dirname, '..');
const manifest = JSON.parse(fs.readFileSync(path.resolve(process.argv[2] || path.join(root, 'package.json')), 'utf8'));
const lockfile = path.resolve(process.argv[3] || path.join(root, 'package-lock.json'));
const packages = JSON.parse(fs.readFileSync(lockfile, 'utf8')).packages || {};

const promised = manifest.engines && manifest.engines.node;
if (!promised || !semver.validRange(promised)) {
  process.stderr.write(`package.json: engines.node is ${JSON.stringify(promised)}, not a version range\n`);
  process.exit(1);
}
const lowest = new semver.Range(promised).set.map((alternative) => semver.minVersion(alternative.map((c) => c.value).join(' ')).version);

const problems = [];
for (const [location, entry] of Object.entries(packages)) {
  const wanted = location && entry.engines && entry.engines.node;
  if (!wanted) continue;
  const refused = lowest.filter((version) => !semver.satisfies(version, wanted));
  if (refused.length) problems.push(`${location.replace(/^.*node_modules\//, '')}@${entry.version} wants node ${wanted}: not ${refused.join(', ')}`);
}
if (problems.length) {
  process.stderr.write(
    `${problems.join('\n')}\nengines.node is ${promised}: pin a release that supports it, or change what the project supports (docs/decisions.md, "Stack and versions").\n`,
  );
  process.exit(1);
}
process.stdout.write(`check-engines: every package in ${path.basename(lockfile)} accepts node ${lowest.join(', ')}\n`);
