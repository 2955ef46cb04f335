import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { limitHeapGrowth } from './heap-growth';

/**
 * The heap limit measured as a process sees it: the same churn (a long-lived set plus a stream of
 * short-lived objects, as a worker's attempts are) with and without limitHeapGrowth.
 */
describe('limitHeapGrowth', () => {
  function largestHeap(limit: boolean): number {
    const script = `
      ${limit ? `require(${JSON.stringify(join(__dirname, 'heap-growth'))}).limitHeapGrowth();` : ''}
      const live = [];
      for (let i = 0; i < 300000; i++) live.push({ a: i, b: 'x' + i, c: [i, i] });
      let largest = 0, recent = [];
      for (let round = 0; round < 400; round++) {
        for (let i = 0; i < 20000; i++) recent.push({ round, i, s: 'y' + i, list: new Array(4).fill(i) });
        if (recent.length > 60000) recent = recent.slice(-20000);
        largest = Math.max(largest, process.memoryUsage().heapTotal);
      }
      process.stdout.write(String(largest));`;
    const out = execFileSync(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', script], {
      env: { ...process.env, NODE_OPTIONS: '' },
      encoding: 'utf8',
    });
    return Number(out);
  }

  it('keeps the committed heap well below what V8 lets it grow to by itself', () => {
    const unlimited = largestHeap(false);
    const limited = largestHeap(true);
    expect(limited).toBeLessThan(unlimited * 0.8);
  }, 60_000);

  it("leaves an operator's own choice alone", () => {
    expect(limitHeapGrowth(50, ['--heap-growing-percent=200'])).toBe(false);
    expect(limitHeapGrowth(50, ['', '--max-old-space-size=512 --heap-growing-percent=30'])).toBe(false);
  });
});
