// Package clients owns plugboard's client matrix: the real binary driven by
// the MCP clients agents actually run on — the official TypeScript SDK
// (Client.callTool, with its outputSchema checks), MCP Inspector's CLI and
// the go-sdk client — over stdio and streamable HTTP. Each is a
// scenario.Connector, so the first-party scenario pack (tools/list, every
// error code of the spec's scenarios, the guide's closed loop) runs through
// it unchanged; Features adds what the pack cannot express (progress,
// cancellation, resources, prompts).
//
// The TypeScript SDK, MCP Inspector and the Node.js 22 they need are pinned
// by package-lock.json beside this file and installed by install.sh into
// .cache/mcp-clients (Install). It must not know plugin internals: it speaks
// to the server only as those clients do.
package clients
