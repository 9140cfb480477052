package store

import (
	"context"
	"path/filepath"
	"testing"
)

// The benchmarks read one page of 50 entries from a 1,000,000-entry log
// and, as the baseline measured in the same run, from a 1,000-entry log:
// the ratio shows whether a page's cost depends on the log's length.

func benchLog(b *testing.B, n int) (*Store, string) {
	b.Helper()
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, seedLog(b, s, n)
}

func benchPages(b *testing.B, n int) {
	s, pid := benchLog(b, n)
	ctx := context.Background()
	mid := int64(n / 2)
	b.Run("tail", func(b *testing.B) {
		for b.Loop() {
			if p, err := s.LogTail(ctx, pid, ChannelNormalized, -1, 50); err != nil || len(p.Entries) != 50 {
				b.Fatal(err)
			}
		}
	})
	b.Run("cursor", func(b *testing.B) {
		for b.Loop() {
			if p, err := s.LogTail(ctx, pid, ChannelNormalized, mid, 50); err != nil || len(p.Entries) != 50 {
				b.Fatal(err)
			}
		}
	})
	b.Run("after", func(b *testing.B) {
		for b.Loop() {
			if p, err := s.LogAfter(ctx, pid, ChannelNormalized, mid, 50); err != nil || len(p.Entries) != 50 {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkLogPage1M(b *testing.B)   { benchPages(b, 1_000_000) }
func BenchmarkLogPage1000(b *testing.B) { benchPages(b, 1000) }
