//go:build !linux

package registry

// inBackground does nothing off Linux: the warm-up runs at normal
// priority there.
func inBackground() {}
