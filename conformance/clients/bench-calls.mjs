// bench-calls.mjs: tools/call latency through the official TypeScript MCP client.
//
// Connects one @modelcontextprotocol/sdk Client per server over StdioClientTransport (the client starts each
// server as its child), makes the warm-up calls, then the measured calls: sequential Client.callTool() calls,
// each timed with process.hrtime.bigint() from the call to its resolved result (the SDK's own result parsing
// and outputSchema check included). With several servers the calls alternate server by server, one at a
// time, and the server called first rotates every round, so load drift on the machine hits every server
// alike. Each answer is checked (isError unset, and it contains "expect" when given), outside the timing.
//
// The one argument is a JSON spec:
//
//   {"calls": 2000, "warmup": 200, "servers": [
//      {"name": "plugboard", "command": BIN, "args": [...], "cwd": DIR, "env": {...},
//       "tool": "echo", "arguments": {...}, "expect": "substring of the answer",
//       "waitFiles": {"dir": DIR, "count": N}, "listTools": true},
//      ...]}
//
// After connecting, the client lists the tools (Client.listTools(), every page; "listTools": false skips it),
// as clients do before calling: the SDK then checks every answer's structuredContent against the tool's
// outputSchema, when it has one, inside callTool() and so inside the timing.
//
// "waitFiles" (optional) waits after connecting, before any call, until DIR holds at least N regular files
// (at most 10 minutes): for `plugboard serve`, DATA/compiled, where the background warm-up writes one
// compiled module per plugin. A spec without "servers" is one server (its fields at the top level).
//
// It prints one JSON line: {"node", "sdk", "results": [{"name", "p50_us", "p90_us", "mean_us", "min_us",
// "max_us", "n", "output_schema"}, ...]} in the order of "servers" ("output_schema": whether the listed tool
// has one); for a spec without "servers", that server's result alone ({"p50_us", "p90_us", "mean_us", "n",
// ...}). Servers' stderr goes to stderr.
//
// Run (Node >= 22 and the packages installed by conformance/clients/install.sh into .cache/mcp-clients):
//
//   .cache/mcp-clients/node_modules/.bin/node conformance/clients/bench-calls.mjs "$SPEC"
//
// The packages are found in $MCP_CLIENTS_DIR (default: .cache/mcp-clients of this repository).
// bench/ (BenchmarkFootprint/ts-client/echo) runs it.

import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const self = fileURLToPath(import.meta.url);
const clientsDir = process.env.MCP_CLIENTS_DIR || resolve(dirname(self), '../../.cache/mcp-clients');
const sdkDir = join(clientsDir, 'node_modules/@modelcontextprotocol/sdk');
const sdk = (p) => import(pathToFileURL(join(sdkDir, 'dist/esm', p)).href);
const { Client } = await sdk('client/index.js');
const { StdioClientTransport } = await sdk('client/stdio.js');

const spec = JSON.parse(process.argv[2] ?? '{}');
const single = !Array.isArray(spec.servers);
const servers = single ? [{ name: spec.name ?? 'server', ...spec }] : spec.servers;
const calls = spec.calls ?? 2000;
const warmup = spec.warmup ?? 200;
if (servers.length === 0 || !servers.every((s) => s.command && s.tool)) {
  console.error('bench-calls: every server needs "command" and "tool"');
  process.exit(2);
}

function countFiles(dir) {
  let n = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    if (e.isFile()) n++;
    else if (e.isDirectory()) n += countFiles(join(dir, e.name));
  }
  return n;
}

async function waitFiles({ dir, count }) {
  const deadline = Date.now() + 10 * 60 * 1000;
  while (countFiles(dir) < count) {
    if (Date.now() > deadline) throw new Error(`${dir} holds ${countFiles(dir)} files after 10 minutes, want ${count}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const conns = [];
for (const s of servers) {
  const transport = new StdioClientTransport({ command: s.command, args: s.args ?? [], cwd: s.cwd, env: s.env, stderr: 'inherit' });
  const client = new Client({ name: 'plugboard-bench-calls', version: '1.0.0' }, { capabilities: {} });
  try {
    await client.connect(transport);
  } catch (err) {
    console.error(`bench-calls: connect ${s.name}: ${err?.message ?? err}`);
    process.exit(1);
  }
  // As clients do before calling: listTools() also caches each tool's outputSchema, which makes every
  // callTool() check the answer's structuredContent against it.
  let outputSchema = false;
  if (s.listTools !== false) {
    const tools = [];
    let cursor;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    const tool = tools.find((t) => t.name === s.tool);
    if (!tool) {
      console.error(`bench-calls: ${s.name} lists no tool ${s.tool}`);
      process.exit(1);
    }
    outputSchema = Boolean(tool.outputSchema);
  }
  conns.push({ s, client, outputSchema, durations: [] });
}
for (const c of conns) {
  if (c.s.waitFiles) await waitFiles(c.s.waitFiles);
}

async function call(c, timed) {
  const params = { name: c.s.tool, arguments: c.s.arguments ?? {} };
  const t0 = process.hrtime.bigint();
  const res = await c.client.callTool(params);
  const dt = process.hrtime.bigint() - t0;
  if (res.isError || (c.s.expect !== undefined && !JSON.stringify(res).includes(c.s.expect))) {
    throw new Error(`${c.s.name}: tools/call ${c.s.tool}: unexpected result ${JSON.stringify(res).slice(0, 300)}`);
  }
  if (timed) c.durations.push(Number(dt) / 1000); // µs
}

async function rounds(n, timed) {
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < conns.length; k++) await call(conns[(i + k) % conns.length], timed);
  }
}

try {
  await rounds(warmup, false);
  await rounds(calls, true);
} catch (err) {
  console.error(`bench-calls: ${err?.message ?? err}`);
  process.exit(1);
}

function stats(name, outputSchema, ds) {
  const sorted = [...ds].sort((a, b) => a - b);
  const q = (p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
  const round = (x) => Math.round(x * 10) / 10;
  return {
    name,
    p50_us: round(q(0.5)),
    p90_us: round(q(0.9)),
    mean_us: round(ds.reduce((a, b) => a + b, 0) / ds.length),
    min_us: round(sorted[0]),
    max_us: round(sorted[sorted.length - 1]),
    n: ds.length,
    output_schema: outputSchema,
  };
}

const results = conns.map((c) => stats(c.s.name, c.outputSchema, c.durations));
for (const c of conns) await c.client.close();
let sdkVersion = null;
try {
  sdkVersion = JSON.parse(readFileSync(join(sdkDir, 'package.json'), 'utf8')).version;
} catch {}
const out = single ? results[0] : { node: process.versions.node, sdk: sdkVersion, results };
process.stdout.write(JSON.stringify(out) + '\n');
