package runtime

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestEgressDNSRebinding attacks the address gate with a rebinding DNS
// server, through the plugin's real http.Client: the name's first answer is
// a public address, every later one loopback, where a listener waits. The
// client must resolve once and connect only to the address it checked. An
// answer mixing a public and a loopback address is refused whole.
func TestEgressDNSRebinding(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	public := netip.MustParseAddr("192.0.2.1") // TEST-NET-1: public to the gate, routed nowhere
	loopback := netip.MustParseAddr("127.0.0.1")

	var lookups atomic.Int32
	var answer func(n int32) []netip.Addr
	old := lookupNetIP
	t.Cleanup(func() { lookupNetIP = old })
	lookupNetIP = func(_ context.Context, _, host string) ([]netip.Addr, error) {
		if host != "rebind.example" {
			return nil, errors.New("unexpected lookup of " + host)
		}
		return answer(lookups.Add(1)), nil
	}
	g, err := newEgress("p", &Egress{AllowedHosts: []string{"rebind.example:" + port}}, 1<<20, DefaultLimits(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	get := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://rebind.example:"+port+"/", nil)
		resp, err := g.client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}

	// Public first, loopback after.
	answer = func(n int32) []netip.Addr {
		if n == 1 {
			return []netip.Addr{public}
		}
		return []netip.Addr{loopback}
	}
	if err := get(); err == nil {
		t.Error("the request succeeded: it reached something other than the checked address")
	}
	if n := lookups.Load(); n != 1 {
		t.Errorf("%d lookups for one request, want 1", n)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the loopback listener got %d connections", n)
	}

	// Public and loopback in one answer.
	lookups.Store(0)
	answer = func(int32) []netip.Addr { return []netip.Addr{public, loopback} }
	err = get()
	var r *refusal
	if !errors.As(err, &r) || !strings.Contains(r.env.Message, "loopback") {
		t.Errorf("a mixed answer: %v, want a refusal naming loopback", err)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the loopback listener got %d connections", n)
	}
}
