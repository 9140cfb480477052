//go:build !wasip1

package main

// rawAttempts makes no raw WASI calls outside WebAssembly.
func rawAttempts() []Attempt { return nil }
