//go:build !unix

package audit_test

import "time"

// cpuTime is 0 where getrusage is missing: cpu-ns/op then reads 0.
func cpuTime() time.Duration { return 0 }
