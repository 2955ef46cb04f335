/**
 * Summarises .cpuprofile files written with `BENCH_PROFILE_DIR=/tmp/x npm run bench ...`:
 * self time by function and by package (node_modules/<pkg>, dist/src/<file>, node internals).
 *
 *   npx ts-node --transpile-only bench/profile-summary.ts /tmp/x/s3-api.cpuprofile [top]
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

function packageOf(url: string): string {
  if (!url) return '(native / idle / gc)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1];
  const dist = /dist\/(src\/.*)$/.exec(url);
  if (dist) return dist[1];
  if (url.startsWith('node:')) return 'node internals';
  return url;
}

function main(): void {
  const [file, topArg] = process.argv.slice(2);
  const top = Number(topArg ?? 25);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const fn = new Map<string, number>();
  const pkg = new Map<string, number>();
  for (const [id, us] of self) {
    const node = byId.get(id)!;
    const { functionName, url, lineNumber } = node.callFrame;
    const label = `${functionName || '(anonymous)'} ${packageOf(url)}:${lineNumber + 1}`;
    fn.set(label, (fn.get(label) ?? 0) + us);
    pkg.set(packageOf(url) + (url ? '' : ` ${functionName}`), (pkg.get(packageOf(url) + (url ? '' : ` ${functionName}`)) ?? 0) + us);
  }
  const print = (title: string, map: Map<string, number>) => {
    console.log(`\n${title} (of ${(total / 1e6).toFixed(1)} s sampled)`);
    for (const [k, us] of [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      console.log(`${((us / total) * 100).toFixed(1).padStart(5)} %  ${k}`);
    }
  };
  print('Self time by package/file', pkg);
  print('Self time by function', fn);

  // Inclusive time of the service's own functions (dist/src): where its requests spend their time.
  const inclusive = new Map<number, number>();
  const totalOf = (id: number): number => {
    const cached = inclusive.get(id);
    if (cached !== undefined) return cached;
    const node = byId.get(id)!;
    const sum = (self.get(id) ?? 0) + (node.children ?? []).reduce((a, c) => a + totalOf(c), 0);
    inclusive.set(id, sum);
    return sum;
  };
  const ours = new Map<string, number>();
  for (const node of profile.nodes) {
    if (!/dist\/src\//.test(node.callFrame.url)) continue;
    const label = `${node.callFrame.functionName || '(anonymous)'} ${packageOf(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`;
    ours.set(label, (ours.get(label) ?? 0) + totalOf(node.id));
  }
  print("Inclusive time of the service's own functions", ours);
}

main();
