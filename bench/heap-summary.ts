/**
 * Summarises heap snapshots written with `BENCH_HEAP_SNAPSHOTS=1 npm run bench -- --scenario 9 ...`
 * (bench/lib/heap-preload.js): objects by constructor (count, self size), as DevTools' Summary view.
 * With two files, the difference (second minus first), largest first: what the later heap holds
 * that the earlier one did not.
 *
 *   npx ts-node --transpile-only bench/heap-summary.ts <before>.heapsnapshot [<after>.heapsnapshot] [--top N]
 */
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

type Row = { count: number; size: number };

function summarise(file: string): Map<string, Row> {
  const heap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const fields = heap.snapshot.meta.node_fields;
  const types = heap.snapshot.meta.node_types[0];
  const width = fields.length;
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
  const rows = new Map<string, Row>();
  for (let i = 0; i < heap.nodes.length; i += width) {
    const type = types[heap.nodes[i + typeAt]];
    const key = type === 'object' || type === 'native' ? heap.strings[heap.nodes[i + nameAt]] : `(${type})`;
    const row = rows.get(key) ?? { count: 0, size: 0 };
    row.count += 1;
    row.size += heap.nodes[i + sizeAt];
    rows.set(key, row);
  }
  return rows;
}

function main(): void {
  const args = process.argv.slice(2);
  const topAt = args.indexOf('--top');
  const top = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : 40;
  const [first, second] = args;
  if (!first) {
    process.stderr.write('usage: bench/heap-summary.ts <before>.heapsnapshot [<after>.heapsnapshot] [--top N]\n');
    process.exit(2);
  }
  const a = summarise(first);
  const b = second ? summarise(second) : undefined;
  const rows = [...new Set([...a.keys(), ...(b?.keys() ?? [])])].map((name) => {
    const x = a.get(name) ?? { count: 0, size: 0 };
    const y = b?.get(name) ?? { count: 0, size: 0 };
    return b ? { name, count: y.count - x.count, size: y.size - x.size } : { name, ...x };
  });
  rows.sort((p, q) => Math.abs(q.size) - Math.abs(p.size));
  const total = rows.reduce((sum, r) => sum + r.size, 0);
  const mb = (n: number) => `${(n / 1048576).toFixed(2)} MB`;
  process.stdout.write(`${b ? 'difference' : 'total'}: ${mb(total)}\n`);
  for (const r of rows.slice(0, top)) process.stdout.write(`${String(r.count).padStart(9)}  ${mb(r.size).padStart(10)}  ${r.name.slice(0, 100)}\n`);
}

main();
