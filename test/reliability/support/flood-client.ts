import { Agent, request } from 'undici';

/**
 * A flooding client, run as a child process of a reliability test (so its busy loops do not delay
 * the test's own measurements): `batchLoops` + `singleLoops` connections that each POST their body
 * again as soon as the last answer came, for `durationMs`, then report what they got over IPC.
 */
export interface FloodPlan {
  url: string;
  key: string;
  durationMs: number;
  loops: Array<{ count: number; body: string; calls: number }>;
}

export interface FloodReport {
  statuses: Record<string, number>;
  /** Calls (batch messages) answered 200. */
  admitted: number;
  /** Requests refused (429) by the rate limit, and as too many at once. */
  rate: number;
  busy: number;
  requests: number;
}

async function flood(plan: FloodPlan): Promise<FloodReport> {
  const connections = plan.loops.reduce((n, l) => n + l.count, 0);
  const agent = new Agent({ connections, keepAliveTimeout: 10_000 });
  const report: FloodReport = { statuses: {}, admitted: 0, rate: 0, busy: 0, requests: 0 };
  const end = Date.now() + plan.durationMs;
  process.send?.({ started: true });
  const loop = async (body: string, calls: number) => {
    while (Date.now() < end) {
      let status = 0;
      let text = '';
      try {
        const res = await request(plan.url, {
          method: 'POST',
          dispatcher: agent,
          headers: { authorization: `Bearer ${plan.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body,
          headersTimeout: 30_000,
          bodyTimeout: 30_000,
        });
        status = res.statusCode;
        text = await res.body.text();
      } catch {
        status = 0;
      }
      report.requests += 1;
      report.statuses[status] = (report.statuses[status] ?? 0) + 1;
      if (status === 200) report.admitted += calls;
      else if (status === 429) {
        if (text.includes('MCP_RATE_LIMIT')) report.rate += 1;
        else report.busy += 1;
      }
    }
  };
  await Promise.all(plan.loops.flatMap((l) => Array.from({ length: l.count }, () => loop(l.body, l.calls))));
  await agent.close();
  return report;
}

if (require.main === module) {
  // The plan comes over IPC (its bodies can be larger than an environment variable may be).
  process.once('message', (plan: FloodPlan) => {
    flood(plan)
      .then((report) => process.send!(report, () => process.exit(0)))
      .catch((error: Error) => {
        process.stderr.write(`flood client failed: ${error.stack}\n`);
        process.exit(1);
      });
  });
}
