// Package bench holds plugboard's performance benchmarks and nothing else.
//
// Run them with `make bench`, or directly with
//
//	go test -run '^$' -bench . -benchmem ./bench/...
//
// docs/BENCHMARKS.md records the figures, the exact command behind each one
// and the targets they are held to.
package bench
