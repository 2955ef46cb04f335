import { TestApp } from './app';

/** Prometheus text exposition → the value of one sample (`name{a="b",...}`, labels in any order), or undefined. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(match[3]);
  }
  return undefined;
}

/** GET /metrics on the API's port as Prometheus scrapes it, in an app without METRICS_TOKEN (the test environment's). */
export async function scrapeMetrics(t: TestApp): Promise<string> {
  const res = await t.http().get('/metrics');
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${res.text}`);
  return res.text;
}
