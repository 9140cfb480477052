package main

import (
	"slices"
	"testing"

	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// plugin new's choices from this build: the modules are unpublished here,
// and the source tree this binary was compiled from is a checkout, the
// default for the replace lines when no checkout holds the binary.
func TestPluginNewChoices(t *testing.T) {
	root := buildtest.Root(t)
	if v, published := sdkVersion(); v != unpublished || published {
		t.Errorf("sdkVersion() = %q, %t; want %q, false in a checkout's build", v, published, unpublished)
	}
	if err := isCheckout(root); err != nil {
		t.Errorf("isCheckout(%s): %v", root, err)
	}
	if err := isCheckout(t.TempDir()); err == nil {
		t.Error("isCheckout of an empty folder succeeded")
	}
	if c := checkoutCandidates(); !slices.Contains(c, root) {
		t.Errorf("checkoutCandidates() = %v, without the source tree %s", c, root)
	}
	if got, err := replaceCheckout("", false); err != nil || got != root {
		t.Errorf("replaceCheckout() = %q, %v; want %s", got, err, root)
	}
	if got, err := replaceCheckout("", true); err != nil || got != "" {
		t.Errorf("replaceCheckout() of published modules = %q, %v; want none", got, err)
	}
}
