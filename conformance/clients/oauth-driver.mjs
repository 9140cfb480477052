// The official TypeScript SDK's OAuth client (client credentials) against
// plugboard: it connects without a token, discovers the authorization
// server from the 401's resource_metadata (RFC 9728), obtains a token for
// the server's resource, lists the tools and calls one.
//
// Usage: node oauth-driver.mjs URL CLIENT_ID CLIENT_SECRET SCOPE TOOL ARGS_JSON
// (the SDK's client-credentials provider asks for the scope it is configured
// with, not the one the challenge names).
// Prints one JSON line: {"tools": [...], "result": CallToolResult,
// "requests": [every URL the client fetched, in order]}.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';

const [url, clientId, clientSecret, scope, tool, args] = process.argv.slice(2);
const requests = [];
const recordingFetch = async (input, init) => {
  const line = `${init?.method ?? 'GET'} ${typeof input === 'string' ? input : input.href ?? input.url}`;
  const res = await fetch(input, init);
  requests.push(`${line} -> ${res.status}`);
  return res;
};
// On failure the requests made so far tell where the flow stopped.
process.on('exit', (code) => { if (code !== 0) console.error('requests:', JSON.stringify(requests, null, 1)); });
const authProvider = new ClientCredentialsProvider({ clientId, clientSecret, scope });
const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider, fetch: recordingFetch });
const client = new Client({ name: 'plugboard-oauth-driver', version: '1.0.0' });
await client.connect(transport);
const tools = await client.listTools();
const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
console.log(JSON.stringify({ tools: tools.tools.map((t) => t.name), result, requests }));
await client.close();
