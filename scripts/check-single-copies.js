#!/usr/bin/env node
/*
 * Fails when a package that must exist once in production appears in more than one version in
 * package-lock.json (docs/decisions.md, "Dependencies"): two copies of the logger or of the HTTP
 * framework mean two builds of it in every process, configured apart. A dependency that pins
 * another version is aligned with an `overrides` entry in package.json.
 *
 * Run by `npm run lint`. Usage: node scripts/check-single-copies.js [lockfile]
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

/** Packages that must have exactly one version among the production (not dev) entries of the lockfile. */
const SINGLE = ['pino', 'express'];

const file = path.resolve(process.argv[2] || path.join(__dirname, '..', 'package-lock.json'));
const packages = JSON.parse(fs.readFileSync(file, 'utf8')).packages || {};

const versions = new Map(SINGLE.map((name) => [name, new Map()]));
for (const [location, entry] of Object.entries(packages)) {
  if (!location || entry.dev || entry.link) continue;
  const name = location.slice(location.lastIndexOf('node_modules/') + 'node_modules/'.length);
  const found = versions.get(name);
  if (found) found.set(entry.version, [...(found.get(entry.version) || []), location]);
}

const problems = [];
for (const [name, found] of versions) {
  if (found.size > 1) {
    const where = [...found].map(([version, locations]) => `${version} (${locations.join(', ')})`).join('; ');
    problems.push(`${name} is in production in ${found.size} versions: ${where}`);
  }
}
if (problems.length) {
  process.stderr.write(
    `${problems.join('\n')}\nLeave one: align the versions, or add an "overrides" entry in package.json (docs/decisions.md, "Dependencies").\n`,
  );
  process.exit(1);
}
process.stdout.write(`check-single-copies: one version each of ${SINGLE.join(', ')} in ${path.basename(file)}\n`);
