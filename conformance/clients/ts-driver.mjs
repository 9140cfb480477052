// ts-driver: the official TypeScript MCP SDK's Client, driven line by line
// for plugboard's client matrix (conformance/clients). The Go side starts
// it with one argument, a JSON object:
//
//   {"url": "http://127.0.0.1:PORT/mcp", "headers": {...}}       streamable HTTP
//   {"command": BIN, "args": [...], "cwd": DIR, "env": {...}}     stdio: the client starts the server
//
// It connects, prints {"ready": true, "server": {...}} on stdout, then reads
// one JSON request per line on stdin and answers each with one line on
// stdout, {"id", "result"} or {"id", "error": {"name", "code", "message"}}:
//
//   {"id", "op": "listTools"}                        Client.listTools(), every page
//   {"id", "op": "callTool", "name", "arguments",    Client.callTool(), with its outputSchema checks;
//    "progress": bool, "cancelAfterProgress": bool,   "progress" asks for progress notifications (the
//    "timeoutMs": N}                                   answer lists them), "cancelAfterProgress" aborts
//                                                      the call at the first one
//   {"id", "op": "cancel", "target": ID}             aborts the call with that id
//   {"id", "op": "listResources"} / {"op": "readResource", "uri"} / {"op": "listPrompts"} /
//   {"op": "getPrompt", "name", "arguments"}
//
// Requests run concurrently. The server's stderr (stdio) goes to stderr. EOF
// on stdin closes the client and exits.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import readline from 'node:readline';

const cfg = JSON.parse(process.argv[2] ?? '{}');

function send(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function errorOf(err) {
  return { name: err?.name ?? 'Error', code: err?.code ?? null, message: String(err?.message ?? err) };
}

let transport;
if (cfg.url) {
  transport = new StreamableHTTPClientTransport(new URL(cfg.url), { requestInit: { headers: cfg.headers ?? {} } });
} else {
  transport = new StdioClientTransport({ command: cfg.command, args: cfg.args ?? [], cwd: cfg.cwd, env: cfg.env, stderr: 'pipe' });
  transport.stderr?.pipe(process.stderr);
}
const client = new Client({ name: 'plugboard-client-matrix', version: '1.0.0' }, { capabilities: {} });
try {
  await client.connect(transport);
} catch (err) {
  send({ ready: false, error: errorOf(err) });
  process.exit(1);
}
send({ ready: true, server: client.getServerVersion(), capabilities: client.getServerCapabilities() });

const inFlight = new Map(); // request id → AbortController

async function listAll(method, key) {
  const out = [];
  let cursor;
  do {
    const page = await method(cursor ? { cursor } : undefined);
    out.push(...page[key]);
    cursor = page.nextCursor;
  } while (cursor);
  return { [key]: out };
}

async function run(req) {
  switch (req.op) {
    case 'listTools':
      return listAll((p) => client.listTools(p), 'tools');
    case 'callTool': {
      const ctl = new AbortController();
      inFlight.set(req.id, ctl);
      const progress = [];
      const options = { signal: ctl.signal, timeout: req.timeoutMs ?? 60000 };
      if (req.progress || req.cancelAfterProgress) {
        options.onprogress = (p) => {
          progress.push(p);
          if (req.cancelAfterProgress) ctl.abort('cancelled by the client matrix after the first progress');
        };
      }
      try {
        const result = await client.callTool({ name: req.name, arguments: req.arguments ?? {} }, undefined, options);
        return req.progress || req.cancelAfterProgress ? { ...result, _progress: progress } : result;
      } catch (err) {
        if (progress.length) err.progress = progress;
        throw err;
      } finally {
        inFlight.delete(req.id);
      }
    }
    case 'cancel':
      inFlight.get(req.target)?.abort('cancelled by the caller');
      return {};
    case 'listResources':
      return listAll((p) => client.listResources(p), 'resources');
    case 'readResource':
      return client.readResource({ uri: req.uri });
    case 'listPrompts':
      return listAll((p) => client.listPrompts(p), 'prompts');
    case 'getPrompt':
      return client.getPrompt({ name: req.name, arguments: req.arguments ?? {} });
    default:
      throw new Error(`unknown op ${JSON.stringify(req.op)}`);
  }
}

const pending = new Set();
const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  if (!line.trim()) return;
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    send({ id: null, error: errorOf(err) });
    return;
  }
  const p = run(req).then(
    (result) => send({ id: req.id, result }),
    (err) => send({ id: req.id, error: { ...errorOf(err), progress: err?.progress } }),
  );
  pending.add(p);
  p.finally(() => pending.delete(p));
});
lines.on('close', async () => {
  for (const ctl of inFlight.values()) ctl.abort('the driver is closing');
  await Promise.allSettled([...pending]);
  await client.close().catch(() => {});
  process.exit(0);
});
