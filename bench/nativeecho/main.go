// Command nativeecho is the baseline of plugboard's stdio and HTTP
// benchmarks: an MCP server built directly on the official go-sdk with the
// echo tool compiled in, registered with mcp.AddTool. It serves over stdio
// until stdin closes, or with -http ADDR over streamable HTTP at
// http://ADDR/mcp (the go-sdk's mcp.NewStreamableHTTPHandler, default
// options, one server for every session) until interrupted. It exists only
// for bench/ and is not part of the product.
package main

import (
	"context"
	"flag"
	"log"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Input is the arguments of echo, as in plugins/echo.
type Input struct {
	Text string `json:"text" jsonschema:"the text to return unchanged; any UTF-8 string, may be empty"`
}

// Output is the answer of echo, as in plugins/echo.
type Output struct {
	Text string `json:"text" jsonschema:"exactly the text that was sent"`
}

func main() {
	addr := flag.String("http", "", "serve streamable HTTP at http://ADDR/mcp instead of stdio")
	flag.Parse()
	srv := mcp.NewServer(&mcp.Implementation{Name: "nativeecho", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "echo",
		Description: "Returns its input unchanged; for tests and benchmarks.",
	}, func(_ context.Context, _ *mcp.CallToolRequest, in Input) (*mcp.CallToolResult, Output, error) {
		return nil, Output(in), nil
	})
	if *addr != "" {
		// The same path as plugboard serve --http, so a benchmark points
		// the same client at either.
		mux := http.NewServeMux()
		mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		log.Fatal(http.ListenAndServe(*addr, mux))
	}
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
