// listtools-cost.mjs: what the official TypeScript MCP client pays for plugboard's tool list.
//
// The TypeScript SDK's Client.listTools() compiles every tool's outputSchema with Ajv (cacheToolMetadata),
// which in a fresh Node process is JIT-cold code generation. For each target (a plugboard binary and a plugins
// directory) and each of --runs rounds, this script measures, interleaving the targets so machine drift hits
// them all alike:
//
//   plain    tools/list over raw newline-delimited JSON-RPC (initialize, notifications/initialized, tools/list)
//            to a fresh `plugboard serve`: the time from writing the request to the parsed answer. The floor.
//   ts       Client.listTools() (@modelcontextprotocol/sdk, StdioClientTransport) as the first request after
//            connect, in a fresh Node process (the script re-spawns itself), against another fresh server.
//   ajv      the part of `ts` spent in the client's AjvJsonSchemaValidator.getValidator, per tool, in the order
//            listed (the client is given a fresh default validator wrapped with a timer; nothing else changes).
//   relist   a second listTools() in that same client, as after notifications/tools/list_changed: the SDK
//            compiles again every outputSchema that has no $id it has already seen.
//
// It prints, per target, the median, min and max of each (milliseconds), the ratio of the ts and plain medians
// and the ten tools with the largest median Ajv compile; --json prints all of it, every tool included.
//
// Each server runs `plugboard serve --plugins DIR --data FRESH_TMPDIR --log-level warn --warm=false`: without
// the background compilation, which would otherwise compete for the CPU with the client being measured
// (--warm keeps the server's default).
//
// Run (Node >= 22 and the packages installed by conformance/clients/install.sh into .cache/mcp-clients):
//
//   .cache/mcp-clients/node_modules/.bin/node conformance/clients/listtools-cost.mjs [--runs 11] [--json] \
//       [--warm] BIN PLUGINS_DIR [BIN2 PLUGINS_DIR2 ...]
//
// The packages are found in $MCP_CLIENTS_DIR (default: .cache/mcp-clients of this repository).

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const self = fileURLToPath(import.meta.url);
const clientsDir = process.env.MCP_CLIENTS_DIR || resolve(dirname(self), '../../.cache/mcp-clients');
const sdk = (p) => import(pathToFileURL(join(clientsDir, 'node_modules/@modelcontextprotocol/sdk/dist/esm', p)).href);

const argv = process.argv.slice(2);
const flag = (name) => { const i = argv.indexOf(name); return i >= 0 && argv.splice(i, 1).length > 0; };
const option = (name, def) => { const i = argv.indexOf(name); return i >= 0 ? argv.splice(i, 2)[1] : def; };

function serveArgs(plugins, data, warm) {
	const args = ['serve', '--plugins', plugins, '--data', data, '--log-level', 'warn'];
	return warm ? args : [...args, '--warm=false'];
}

// ---- child: one cold TypeScript client (`--ts-child BIN PLUGINS WARM`), prints one JSON line ----

if (flag('--ts-child')) {
	const [bin, plugins, warm] = argv;
	const { Client } = await sdk('client/index.js');
	const { StdioClientTransport } = await sdk('client/stdio.js');
	const { AjvJsonSchemaValidator } = await sdk('validation/ajv-provider.js');
	const inner = new AjvJsonSchemaValidator();
	let tools = [];
	const timed = {
		getValidator(schema) {
			const t0 = performance.now();
			const v = inner.getValidator(schema);
			tools.push(performance.now() - t0);
			return v;
		},
	};
	const data = mkdtempSync(join(tmpdir(), 'plugboard-ltc-'));
	const transport = new StdioClientTransport({ command: bin, args: serveArgs(plugins, data, warm === 'true'), stderr: 'inherit' });
	const client = new Client({ name: 'listtools-cost', version: '0' }, { jsonSchemaValidator: timed });
	await client.connect(transport);
	let t0 = performance.now();
	const first = await client.listTools();
	const ts = performance.now() - t0;
	// The client calls getValidator once per tool that has an outputSchema, in list order.
	const perTool = Object.fromEntries(first.tools.filter((t) => t.outputSchema).map((t, i) => [t.name, tools[i]]));
	const ajv = tools.reduce((a, b) => a + b, 0);
	tools = [];
	t0 = performance.now();
	await client.listTools();
	const relist = performance.now() - t0;
	await client.close();
	rmSync(data, { recursive: true, force: true });
	console.log(JSON.stringify({ ts, ajv, relist, relistAjv: tools.reduce((a, b) => a + b, 0), perTool }));
	process.exit(0);
}

// ---- plain client: raw JSON-RPC over the child's stdin/stdout ----

async function plain(bin, plugins, warm) {
	const data = mkdtempSync(join(tmpdir(), 'plugboard-ltc-'));
	const child = spawn(bin, serveArgs(plugins, data, warm), { stdio: ['pipe', 'pipe', 'inherit'] });
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
	await request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'listtools-cost-plain', version: '0' } });
	send({ method: 'notifications/initialized' });
	const t0 = performance.now();
	const list = await request('tools/list', {});
	const ms = performance.now() - t0;
	// End of input is how a stdio server is told to stop.
	const exited = new Promise((ok) => child.once('exit', ok));
	child.stdin.end();
	const timer = setTimeout(() => child.kill(), 5000);
	await exited;
	clearTimeout(timer);
	rmSync(data, { recursive: true, force: true });
	return { ms, tools: list.tools };
}

function tsChild(bin, plugins, warm) {
	return new Promise((ok, fail) => {
		const child = spawn(process.execPath, [self, '--ts-child', bin, plugins, String(warm)], { stdio: ['ignore', 'pipe', 'inherit'] });
		let out = '';
		child.stdout.on('data', (d) => (out += d));
		child.on('exit', (code) => (code === 0 ? ok(JSON.parse(out)) : fail(new Error(`TypeScript client exited ${code}`))));
	});
}

// ---- main ----

const runs = Number(option('--runs', '11'));
const json = flag('--json');
const warm = flag('--warm');
if (argv.length < 2 || argv.length % 2 !== 0 || !(runs > 0)) {
	console.error('usage: listtools-cost.mjs [--runs N] [--json] [--warm] BIN PLUGINS_DIR [BIN2 PLUGINS_DIR2 ...]');
	process.exit(2);
}
const targets = [];
for (let i = 0; i < argv.length; i += 2) {
	targets.push({ bin: resolve(argv[i]), plugins: resolve(argv[i + 1]), plain: [], ts: [], ajv: [], relist: [], relistAjv: [], perTool: {} });
}

for (let r = 0; r < runs; r++) {
	// Alternate the order of the targets, and of the two clients, from round to round.
	const order = r % 2 ? [...targets].reverse() : targets;
	for (const t of order) {
		const steps = [
			async () => { const p = await plain(t.bin, t.plugins, warm); t.plain.push(p.ms); t.tools = p.tools.length; },
			async () => {
				const c = await tsChild(t.bin, t.plugins, warm);
				for (const k of ['ts', 'ajv', 'relist', 'relistAjv']) t[k].push(c[k]);
				for (const [name, ms] of Object.entries(c.perTool)) (t.perTool[name] ??= []).push(ms);
			},
		];
		for (const step of r % 2 ? steps.reverse() : steps) await step();
	}
	if (!json) process.stderr.write(`round ${r + 1}/${runs}\r`);
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b), m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const stats = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
const report = targets.map((t) => ({
	bin: t.bin,
	plugins: t.plugins,
	tools: t.tools,
	runs,
	warm,
	plainMs: stats(t.plain),
	tsListToolsMs: stats(t.ts),
	ajvMs: stats(t.ajv),
	relistMs: stats(t.relist),
	relistAjvMs: stats(t.relistAjv),
	ratioTsToPlain: median(t.ts) / median(t.plain),
	perToolAjvMs: Object.entries(t.perTool).map(([name, xs]) => ({ name, ...stats(xs) })).sort((a, b) => b.median - a.median),
}));

if (json) {
	console.log(JSON.stringify(report, null, 2));
} else {
	const f = (s) => `${s.median.toFixed(1).padStart(7)} ${s.min.toFixed(1).padStart(7)} ${s.max.toFixed(1).padStart(7)}`;
	for (const t of report) {
		console.log(`${t.bin} --plugins ${t.plugins}: ${t.tools} tools, ${runs} runs${warm ? ', server warm-up on' : ''}`);
		console.log('                                   median     min     max  (ms)');
		console.log(`  plain tools/list                ${f(t.plainMs)}`);
		console.log(`  TS Client.listTools(), cold     ${f(t.tsListToolsMs)}`);
		console.log(`    of which Ajv compile          ${f(t.ajvMs)}`);
		console.log(`  TS listTools() again (relist)   ${f(t.relistMs)}`);
		console.log(`    of which Ajv compile          ${f(t.relistAjvMs)}`);
		console.log(`  ratio TS / plain (medians)      ${t.ratioTsToPlain.toFixed(2).padStart(7)}`);
		console.log('  Ajv compile per tool (cold, in list order), top 10: median min max (ms)');
		for (const p of t.perToolAjvMs.slice(0, 10)) console.log(`    ${p.name.padEnd(28)}${f(p)}`);
		console.log();
	}
}
