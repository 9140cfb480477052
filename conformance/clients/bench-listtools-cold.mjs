// bench-listtools-cold.mjs: a cold first Client.listTools() of the official TypeScript MCP client, and the plain
// JSON-RPC tools/list of the same server as its floor.
//
// The approach of listtools-cost.mjs, for a server started exactly as given (no flag added: bench/ passes
// `plugboard serve --plugins DIR` with default flags, so the background warm-up runs as users run it). Each of
// "runs" rounds measures, the order of the two alternating from round to round:
//
//   ts     a fresh Node process (this script re-spawns itself) starts a fresh server through
//          StdioClientTransport, connects a @modelcontextprotocol/sdk Client and times Client.listTools() as
//          the first request after connect (every page), Ajv's compilation of the outputSchemas included;
//   plain  a fresh server, initialize and notifications/initialized over raw newline-delimited JSON-RPC,
//          then tools/list (every page), timed from writing the request to the parsed answer.
//
// Every server gets a fresh data directory: the argument "-" after "--data" in "args" is replaced by a new
// temporary directory, removed once the server has exited. The next run starts only after the previous
// server has exited, so a server still shutting down does not compete for the CPU.
//
// The one argument is a JSON spec: {"command": BIN, "args": ["serve", "--plugins", DIR, "--data", "-"],
// "runs": 7}. It prints one JSON line: {"node", "sdk", "tools", "ts_ms": [...], "plain_ms": [...]}, in
// milliseconds in run order; "tools" is the number of tools the client listed. Servers' stderr is dropped.
//
// Run (Node >= 22 and the packages installed by conformance/clients/install.sh into .cache/mcp-clients):
//
//   .cache/mcp-clients/node_modules/.bin/node conformance/clients/bench-listtools-cold.mjs "$SPEC"
//
// The packages are found in $MCP_CLIENTS_DIR (default: .cache/mcp-clients of this repository).
// bench/ (BenchmarkFootprint/ts-client/list-tools-cold) runs it.

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const self = fileURLToPath(import.meta.url);
const clientsDir = process.env.MCP_CLIENTS_DIR || resolve(dirname(self), '../../.cache/mcp-clients');
const sdkDir = join(clientsDir, 'node_modules/@modelcontextprotocol/sdk');
const sdk = (p) => import(pathToFileURL(join(sdkDir, 'dist/esm', p)).href);

// withData returns args with a fresh data directory in place of "-" after "--data", and that directory.
function withData(args) {
	const data = mkdtempSync(join(tmpdir(), 'plugboard-ltcold-'));
	return { args: args.map((a, i) => (a === '-' && args[i - 1] === '--data' ? data : a)), data };
}

// exited resolves once the process pid no longer exists (at most 30 s, then it is killed).
async function exited(pid) {
	const deadline = Date.now() + 30000;
	for (;;) {
		try {
			process.kill(pid, 0);
		} catch {
			return;
		}
		if (Date.now() > deadline) {
			try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
			return;
		}
		await new Promise((ok) => setTimeout(ok, 20));
	}
}

// ---- child: one cold TypeScript client (`--ts-child SPEC`), prints one JSON line ----

if (process.argv[2] === '--ts-child') {
	const spec = JSON.parse(process.argv[3]);
	const { Client } = await sdk('client/index.js');
	const { StdioClientTransport } = await sdk('client/stdio.js');
	const { args, data } = withData(spec.args ?? []);
	const transport = new StdioClientTransport({ command: spec.command, args, stderr: 'ignore' });
	const client = new Client({ name: 'bench-listtools-cold', version: '0' });
	await client.connect(transport);
	const pid = transport.pid;
	const t0 = performance.now();
	let tools = 0;
	let cursor;
	do {
		const page = await client.listTools(cursor ? { cursor } : undefined);
		tools += page.tools.length;
		cursor = page.nextCursor;
	} while (cursor);
	const ms = performance.now() - t0;
	await client.close();
	if (pid) await exited(pid);
	rmSync(data, { recursive: true, force: true });
	console.log(JSON.stringify({ ms, tools }));
	process.exit(0);
}

// ---- plain client: raw JSON-RPC over the server's stdin/stdout ----

async function plain(spec) {
	const { args, data } = withData(spec.args ?? []);
	const child = spawn(spec.command, args, { stdio: ['pipe', 'pipe', 'ignore'] });
	const gone = new Promise((ok) => child.once('exit', ok));
	const waiting = new Map();
	let buf = '';
	child.stdout.setEncoding('utf8');
	child.stdout.on('data', (chunk) => {
		buf += chunk;
		for (let i; (i = buf.indexOf('\n')) >= 0; buf = buf.slice(i + 1)) {
			const msg = JSON.parse(buf.slice(0, i));
			waiting.get(msg.id)?.(msg);
		}
	});
	let id = 0;
	const send = (msg) => child.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...msg }) + '\n');
	const request = (method, params) => new Promise((ok, fail) => {
		const n = ++id;
		waiting.set(n, (msg) => (msg.error ? fail(new Error(`${method}: ${msg.error.message}`)) : ok(msg.result)));
		send({ id: n, method, params });
	});
	await request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench-listtools-cold-plain', version: '0' } });
	send({ method: 'notifications/initialized' });
	const t0 = performance.now();
	let tools = 0;
	let cursor;
	do {
		const page = await request('tools/list', cursor ? { cursor } : {});
		tools += page.tools.length;
		cursor = page.nextCursor;
	} while (cursor);
	const ms = performance.now() - t0;
	// End of input is how a stdio server is told to stop.
	child.stdin.end();
	const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
	await gone;
	clearTimeout(timer);
	rmSync(data, { recursive: true, force: true });
	return { ms, tools };
}

function tsChild(spec) {
	return new Promise((ok, fail) => {
		const child = spawn(process.execPath, [self, '--ts-child', JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'inherit'] });
		let out = '';
		child.stdout.on('data', (d) => (out += d));
		child.on('exit', (code) => (code === 0 ? ok(JSON.parse(out)) : fail(new Error(`TypeScript client exited ${code}`))));
	});
}

// ---- main ----

const spec = JSON.parse(process.argv[2] ?? '{}');
const runs = spec.runs ?? 7;
if (!spec.command || !(runs > 0)) {
	console.error('bench-listtools-cold: the spec needs "command" (and "runs" > 0)');
	process.exit(2);
}
const res = { node: process.versions.node, sdk: JSON.parse(readFileSync(join(sdkDir, 'package.json'), 'utf8')).version, tools: 0, plain_tools: 0, ts_ms: [], plain_ms: [] };
for (let r = 0; r < runs; r++) {
	const steps = [
		async () => { const c = await tsChild(spec); res.ts_ms.push(c.ms); res.tools = c.tools; },
		async () => { const p = await plain(spec); res.plain_ms.push(p.ms); res.plain_tools = p.tools; },
	];
	for (const step of r % 2 ? steps.reverse() : steps) await step();
}
console.log(JSON.stringify(res));
