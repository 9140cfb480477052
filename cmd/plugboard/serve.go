package main

import (
	"context"
	"flag"
	"io"
	"os"
	"runtime/pprof"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/host/mcpserver"
)

func cmdServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var hf hostFlags
	hf.register(fs)
	warm := fs.Bool("warm", true, "compile plugins in the background at start-up so first calls are fast")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of the whole run to FILE (for performance work)")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2, err: errSilent}
	}
	if fs.NArg() > 0 {
		return usageError("serve takes no arguments, got %q", fs.Args())
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	h, err := hf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer h.close(context.WithoutCancel(ctx))
	h.startPruner(ctx)
	srv := mcpserver.New(h.registry, h.dispatcher, mcpserver.Options{Name: "plugboard", Version: version, Logger: h.log})
	if *warm {
		h.registry.Warm(ctx, 1, h.log)
	}
	err = srv.Run(ctx, &mcp.StdioTransport{})
	if ctx.Err() != nil {
		return nil // interrupted: a normal way to stop a server
	}
	return err
}
