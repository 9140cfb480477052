package runtime

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// TestDialEndsWithItsRequest: Go's Transport goes on dialling after the
// request that started the dial ended; the egress dial stops with the
// request, and gives its connection slot back.
func TestDialEndsWithItsRequest(t *testing.T) {
	ended := make(chan struct{}, 1)
	old := lookupNetIP
	t.Cleanup(func() { lookupNetIP = old })
	// A resolver that answers only when its context ends: a dial that is
	// never cancelled never ends.
	lookupNetIP = func(ctx context.Context, _, _ string) ([]netip.Addr, error) {
		<-ctx.Done()
		ended <- struct{}{}
		return nil, ctx.Err()
	}
	g, err := newEgress("p", &Egress{AllowedHosts: []string{"slow.example"}}, 1<<20, DefaultLimits(), newConnLimiter(8))
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(withRequestCtx(ctx), http.MethodGet, "http://slow.example/", nil)
	if resp, err := g.client.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the request succeeded")
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the dial went on after its request ended")
	}
	for deadline := time.Now().Add(10 * time.Second); g.conns.Open()+g.hostConns.Open() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("slots still held after the dial ended: plugin %d, host %d", g.conns.Open(), g.hostConns.Open())
		}
	}
}

// TestTLSHandshakeEndsWithItsRequest: Go's Transport would finish a TLS
// handshake after its request ended; the egress's ends with the request,
// closing the connection and giving its slot back.
func TestTLSHandshakeEndsWithItsRequest(t *testing.T) {
	old := tlsHandshakeTimeout
	t.Cleanup(func() { tlsHandshakeTimeout = old })
	tlsHandshakeTimeout = time.Hour // only the request can end it
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		io.Copy(io.Discard, c) // never answers the client's hello
		c.Close()
		close(closed)
	}()
	g, err := newEgress("p", &Egress{AllowedHosts: []string{ln.Addr().String()}, AllowPrivate: true}, 1<<20, DefaultLimits(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(withRequestCtx(ctx), http.MethodGet, "https://"+ln.Addr().String()+"/", nil)
	if resp, err := g.client.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the request succeeded")
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the TLS handshake went on after its request ended")
	}
	for deadline := time.Now().Add(10 * time.Second); g.conns.Open() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d slots still held after the handshake ended", g.conns.Open())
		}
	}
}

func TestLimitsOr(t *testing.T) {
	d := DefaultLimits()
	got := Limits{MaxVars: 7, MaxHTTPConnections: -1}.Or(d)
	want := d
	want.MaxVars = 7
	if got != want {
		t.Errorf("Or: %+v, want %+v", got, want)
	}
	if n := len(d.Settings()); n != 7 {
		t.Errorf("Settings lists %d caps, want every field of Limits (7)", n)
	}
	for _, s := range d.Settings() {
		if s.Value <= 0 || s.Setting == "" || s.What == "" {
			t.Errorf("setting %+v", s)
		}
	}
}

func TestClipText(t *testing.T) {
	if got := clipText("short", 10); got != "short" {
		t.Errorf("clipText(short) = %q", got)
	}
	got := clipText("ééééé", 3) // a cut inside the second é
	if got != "é… (10 bytes)" {
		t.Errorf("clipText = %q", got)
	}
}
