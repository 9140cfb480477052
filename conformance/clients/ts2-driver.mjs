// ts2-driver: the official TypeScript MCP SDK v2's Client
// (@modelcontextprotocol/client), pinned to MCP 2026-07-28, driven line by
// line for plugboard's client matrix (conformance/clients). The Go side
// starts it with one argument, a JSON object:
//
//   {"url": "http://127.0.0.1:PORT/mcp", "headers": {...}}       streamable HTTP
//   {"command": BIN, "args": [...], "cwd": DIR, "env": {...}}     stdio: the client starts the server
//   plus "protocolVersion": the revision to pin (default 2026-07-28)
//
// It connects, prints {"ready": true, "protocolVersion", "era", "server"}
// on stdout, then reads one JSON request per line on stdin and answers each
// with one line on stdout, {"id", "result"} or {"id", "error": {"name",
// "code", "message"}}:
//
//   {"id", "op": "listTools"}                        Client.listTools(), every page
//   {"id", "op": "callTool", "name", "arguments",    Client.callTool(), with its outputSchema checks and
//    "progress": bool, "cancelAfterProgress": bool,   its answers to input-required results; "progress"
//    "timeoutMs": N}                                   asks for progress notifications (the answer lists
//                                                      them), "cancelAfterProgress" aborts the call at
//                                                      the first one; the answer's "_answered" lists the
//                                                      input requests the handlers below answered during
//                                                      the call, "_retries" the tools/call requests the
//                                                      SDK sent again with their answers
//   {"id", "op": "cancel", "target": ID}             aborts the call with that id
//   {"id", "op": "listResources"} / {"op": "readResource", "uri"} / {"op": "listPrompts"} /
//   {"op": "getPrompt", "name", "arguments"}
//
// The client answers sampling (the text "Paris"), elicitation (accepts,
// filling every property of the requested schema) and roots (one root,
// file:///tmp/plugboard-roots): at 2026-07-28 the SDK calls these handlers
// for an input-required result and retries the call with their answers.
//
// Requests run concurrently. The server's stderr (stdio) goes to stderr. EOF
// on stdin closes the client and exits.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import readline from 'node:readline';

const cfg = JSON.parse(process.argv[2] ?? '{}');

const samplingModel = 'plugboard-matrix-model';
const samplingText = 'Paris';
const rootURI = 'file:///tmp/plugboard-roots';

function send(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function errorOf(err) {
  return { name: err?.name ?? 'Error', code: err?.code ?? null, message: String(err?.message ?? err) };
}

// fill answers an elicitation form: a default where the schema has one,
// else a value of the property's type (names get "Alice").
function fill(schema) {
  const out = {};
  for (const [key, prop] of Object.entries(schema?.properties ?? {})) {
    if (prop.default !== undefined) {
      out[key] = prop.default;
      continue;
    }
    const options = prop.enum ?? prop.oneOf?.map((o) => o.const);
    switch (prop.type) {
      case 'string':
        out[key] = options?.[0] ?? (prop.format === 'email' || /mail/i.test(key) ? 'alice@example.com' : 'Alice');
        break;
      case 'integer':
      case 'number':
        out[key] = prop.minimum ?? 42;
        break;
      case 'boolean':
        out[key] = true;
        break;
      case 'array': {
        const items = prop.items?.enum ?? prop.items?.anyOf?.map((o) => o.const) ?? [];
        out[key] = items.slice(0, 1);
        break;
      }
    }
  }
  return out;
}

const answered = []; // every input request a handler answered, in order

const client = new Client(
  { name: 'plugboard-client-matrix-v2', version: '1.0.0' },
  {
    capabilities: { sampling: {}, elicitation: { form: {} }, roots: {} },
    versionNegotiation: { mode: { pin: cfg.protocolVersion ?? '2026-07-28' } },
  },
);
client.setRequestHandler('sampling/createMessage', async (req) => {
  answered.push({ method: req.method, params: req.params });
  return { model: samplingModel, role: 'assistant', content: { type: 'text', text: samplingText } };
});
client.setRequestHandler('elicitation/create', async (req) => {
  answered.push({ method: req.method, params: req.params });
  return { action: 'accept', content: fill(req.params.requestedSchema) };
});
client.setRequestHandler('roots/list', async (req) => {
  answered.push({ method: req.method, params: req.params ?? {} });
  return { roots: [{ uri: rootURI, name: 'plugboard-roots' }] };
});

let transport;
if (cfg.url) {
  transport = new StreamableHTTPClientTransport(new URL(cfg.url), { requestInit: { headers: cfg.headers ?? {} } });
} else {
  transport = new StdioClientTransport({ command: cfg.command, args: cfg.args ?? [], cwd: cfg.cwd, env: cfg.env, stderr: 'pipe' });
  transport.stderr?.pipe(process.stderr);
}
// Every tools/call the SDK sends again with inputResponses or a requestState
// is a retry of an input-required result.
const retries = [];
const sendOne = transport.send.bind(transport);
transport.send = (message, options) => {
  for (const m of Array.isArray(message) ? message : [message]) {
    const p = m?.params;
    if (m?.method === 'tools/call' && (p?.inputResponses !== undefined || p?.requestState !== undefined)) {
      retries.push({ name: p.name, inputResponses: Object.keys(p.inputResponses ?? {}), requestState: p.requestState !== undefined });
    }
  }
  return sendOne(message, options);
};
try {
  await client.connect(transport);
} catch (err) {
  send({ ready: false, error: errorOf(err) });
  process.exit(1);
}
send({
  ready: true,
  protocolVersion: client.getNegotiatedProtocolVersion() ?? null,
  era: client.getProtocolEra() ?? null,
  server: client.getServerVersion(),
  capabilities: client.getServerCapabilities(),
});

const inFlight = new Map(); // request id → AbortController

// Lists are fetched, not served from the SDK's response cache: the server
// marks them cacheable for 2 s, and each list of a scenario asks the server.
const fresh = { cacheMode: 'refresh' };

async function run(req) {
  switch (req.op) {
    case 'listTools':
      return client.listTools(undefined, fresh);
    case 'callTool': {
      const ctl = new AbortController();
      inFlight.set(req.id, ctl);
      const progress = [];
      const from = answered.length;
      const fromRetry = retries.length;
      const options = { signal: ctl.signal, timeout: req.timeoutMs ?? 60000 };
      if (req.progress || req.cancelAfterProgress) {
        options.onprogress = (p) => {
          progress.push(p);
          if (req.cancelAfterProgress) ctl.abort('cancelled by the client matrix after the first progress');
        };
      }
      try {
        const result = await client.callTool({ name: req.name, arguments: req.arguments ?? {} }, options);
        const out = { ...result, _answered: answered.slice(from), _retries: retries.slice(fromRetry).filter((r) => r.name === req.name) };
        return req.progress || req.cancelAfterProgress ? { ...out, _progress: progress } : out;
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
      return client.listResources(undefined, fresh);
    case 'readResource':
      return client.readResource({ uri: req.uri }, fresh);
    case 'listPrompts':
      return client.listPrompts(undefined, fresh);
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
