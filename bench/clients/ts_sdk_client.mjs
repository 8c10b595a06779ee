// The official TypeScript SDK as a benchmark client ("ts-sdk"):
//
//     node bench/clients/ts_sdk_client.mjs '<job JSON>'
//
// It takes the job bench/clients/worker.py takes in mode "stdio" (argv, tool, arguments, n,
// warmup, concurrency) and prints one JSON object on its last stdout line in the shape worker.py
// prints, so bench/run_stdio.py records it like every other client:
//
//   cold start   Client + StdioClientTransport built (not timed, like the Python adapters'
//                constructors), then connect() (spawn, initialize, notifications/initialized)
//                and listTools(): spawn to tools listed;
//   warm-up      `warmup` calls, one at a time;
//   runs         for each concurrency C: N calls made by C loops, each calling in a loop until
//                the shared count is used up; every answer checked (`isError` not set), the
//                latency of each call around `await client.callTool(...)`; p50 / p99 as
//                worker.py picks them; calls/s = N / wall time;
//   peak RSS     process.resourceUsage().maxRSS (KiB on Linux) of this node process; the
//                server child is not counted;
//   second start a second Client in the same process, spawn to tools listed.
//
// The SDK speaks the legacy era: connect() sends `initialize` (protocol 2025-11-25 in 1.32.2),
// as every other client in the benchmark does. The server's stderr is discarded ("ignore"). A
// call that throws (a JSON-RPC error, a timeout, the server gone) ends the process with status 1,
// as an exception does in worker.py: run_stdio.py records that measurement as failed.

import { performance } from "node:perf_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

// Python's round(): halves go to the even neighbour, so the percentile index is worker.py's.
function roundHalfEven(x) {
  const floor = Math.floor(x);
  const rest = x - floor;
  if (rest > 0.5) return floor + 1;
  if (rest < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

function percentile(sorted, fraction) {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, roundHalfEven(fraction * (sorted.length - 1)))];
}

class Session {
  constructor(job) {
    const [command, ...args] = job.argv;
    // env is left to the SDK (its default environment: HOME, PATH, USER ...), as the Python
    // SDK's stdio_client does.
    this.transport = new StdioClientTransport({ command, args, stderr: "ignore" });
    this.client = new Client({ name: "bench", version: "1" });
    this.request = { name: job.tool, arguments: job.arguments };
  }

  async open() {
    await this.client.connect(this.transport);
    return (await this.client.listTools()).tools.length;
  }

  async call() {
    const result = await this.client.callTool(this.request);
    return result.isError !== true;
  }

  async close() {
    await this.client.close();
  }
}

// N calls with C in flight: C loops share one count, as worker.py's drive_async does.
async function drive(session, n, concurrency) {
  const latencies = [];
  let taken = 0;
  let answered = 0;
  async function loop() {
    while (taken < n) {
      taken += 1;
      const begun = performance.now();
      const ok = await session.call();
      latencies.push(performance.now() - begun);
      answered += ok ? 1 : 0;
    }
  }
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, loop));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    concurrency,
    n,
    answered,
    errors: n - answered,
    calls_per_s: n / elapsed,
    p50_ms: percentile(latencies, 0.5),
    p99_ms: percentile(latencies, 0.99),
  };
}

async function stdio(job) {
  if ((job.era ?? "legacy") !== "legacy") {
    throw new Error(`ts-sdk speaks the legacy era only, not ${job.era}`);
  }
  const session = new Session(job);
  let started = performance.now();
  const tools = await session.open();
  const cold = performance.now() - started;
  const runs = [];
  try {
    await drive(session, job.warmup, 1);
    for (const concurrency of job.concurrency) {
      runs.push(await drive(session, job.n, concurrency));
    }
  } finally {
    await session.close();
  }
  const second = new Session(job);
  started = performance.now();
  await second.open();
  const again = performance.now() - started;
  await second.close();
  return {
    cold_start_ms: cold,
    second_start_ms: again,
    tools,
    runs,
    peak_rss_mib: process.resourceUsage().maxRSS / 1024,
  };
}

const job = JSON.parse(process.argv[2]);
if (job.mode !== "stdio") {
  process.stderr.write(`ts_sdk_client.mjs: mode ${job.mode} is not supported (stdio only)\n`);
  process.exit(2);
}
const result = await stdio(job);
// Exit once the line is written, even if some handle were left open.
process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
