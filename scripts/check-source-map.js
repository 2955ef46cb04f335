#!/usr/bin/env node
/*
 * Fails when README.md's map of the source tree ("Project layout") and src/ disagree: every
 * folder under src/ must appear in the map, and every folder the map names must exist, so the
 * map cannot drift from the tree (issue 44).
 *
 * The map is the fenced block that starts with `src/`. An entry is a line `  <folder>/  <what it
 * holds>` (e.g. `  channels/sms/  ...`), continued by the more indented lines under it. A folder
 * is in the map when it is an entry, lies above one (`channels/` above `channels/sms/`), or is
 * named `<sub>/` in the text of the entry it lies in (`tools/` in common's). A name `<x>/` in an
 * entry's text must be a folder of that entry or of src/ (`events/*` in mcp's text names the
 * top-level events/).
 *
 * Run by `npm run lint`. Usage: node scripts/check-source-map.js [README.md] [src]
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const readme = fs.readFileSync(path.resolve(process.argv[2] || path.join(root, 'README.md')), 'utf8');
const src = path.resolve(process.argv[3] || path.join(root, 'src'));

/** Whether a folder holds a file somewhere (an empty folder is not in git, so not in the tree). */
function holdsFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).some((entry) => entry.isFile() || (entry.isDirectory() && holdsFiles(path.join(dir, entry.name))));
}

/** Every folder under src/ that holds files, as paths relative to it (`channels/sms`). */
function foldersUnder(dir, prefix = '') {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && holdsFiles(path.join(dir, entry.name)))
    .flatMap((entry) => {
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
      return [relative, ...foldersUnder(path.join(dir, entry.name), relative)];
    });
}

/** The map's lines about src/: from the fence's `src/` line to the first line back at the margin. */
function mapLines(text) {
  const lines = text.split('\n');
  const start = lines.findIndex((line, i) => line === 'src/' && lines[i - 1] === '```');
  if (start < 0) throw new Error('README.md has no map of the source tree (a fenced block starting with `src/`)');
  const end = lines.findIndex((line, i) => i > start && (line === '```' || /^\S/.test(line)));
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** Entries of the map: folder → the text that describes it. */
function entriesOf(lines) {
  const entries = new Map();
  let current = null;
  for (const line of lines) {
    const entry = /^ {2}([a-z0-9-]+(?:\/[a-z0-9-]+)*)\/(?:\s+(.*))?$/.exec(line);
    if (entry) {
      current = entry[1];
      entries.set(current, entry[2] || '');
    } else if (current && /^ {3,}\S/.test(line)) {
      entries.set(current, `${entries.get(current)} ${line.trim()}`);
    } else {
      current = null;
    }
  }
  return entries;
}

const folders = new Set(foldersUnder(src));
const entries = entriesOf(mapLines(readme));
const covered = new Set();
const problems = [];

for (const [folder, text] of entries) {
  if (!folders.has(folder)) problems.push(`the map names src/${folder}/, which does not exist`);
  const parts = folder.split('/');
  parts.forEach((_, i) => covered.add(parts.slice(0, i + 1).join('/')));
  for (const [, name] of text.matchAll(/(?<![\w./<-])([a-z0-9-]+(?:\/[a-z0-9-]+)*)\/(?![\w<])/g)) {
    if (folders.has(`${folder}/${name}`)) covered.add(`${folder}/${name}`);
    else if (!folders.has(name)) problems.push(`the map's src/${folder}/ names ${name}/, which is neither src/${folder}/${name}/ nor src/${name}/`);
  }
}
for (const folder of folders) {
  if (!covered.has(folder)) problems.push(`src/${folder}/ is not in README.md's map of the source tree`);
}

if (problems.length > 0) {
  process.stderr.write(`README.md's map of the source tree ("Project layout") disagrees with src/:\n${problems.map((p) => `  - ${p}`).join('\n')}\n`);
  process.exit(1);
}
process.stdout.write(`README.md's map of the source tree names every folder of src/ (${folders.size}), and only those.\n`);
