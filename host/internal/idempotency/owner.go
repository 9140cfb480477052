package idempotency

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/plugboard/plugboard/host/internal/procsup"
)

// A claim's owner names the process holding it: "HOSTNAME PID IDENTITY",
// IDENTITY being procsup's (boot id and start time), which no later
// process reusing the pid shares. Another host on the same board (a
// `plugboard call`, a second server) then tells a claim whose holder was
// killed from one still running, at once and without a lease to renew.

// ProcessOwner is the owner of this process's claims, or "" when it cannot
// be told (no /proc): such claims are judged by the in-progress TTL only.
var ProcessOwner = sync.OnceValue(func() string {
	host, err := os.Hostname()
	if err != nil || host == "" || strings.ContainsAny(host, " \t\n") {
		return ""
	}
	id, err := procsup.Identity(os.Getpid())
	if err != nil {
		return ""
	}
	return host + " " + strconv.Itoa(os.Getpid()) + " " + id
})

// OwnerDead reports whether the process owner names is gone: on this host,
// no live process has its pid and identity. An owner of another host (a
// board on a shared file system, a container with another hostname) is
// never judged dead, nor one that does not parse: those claims wait for
// the in-progress TTL.
func OwnerDead(owner string) bool {
	f := strings.Fields(owner)
	if len(f) != 3 {
		return false
	}
	host, err := os.Hostname()
	if err != nil || host != f[0] {
		return false
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil || pid <= 0 {
		return false
	}
	if !procsup.Alive(pid) {
		return true // exited, or a zombie waiting to be reaped
	}
	id, err := procsup.Identity(pid)
	if errors.Is(err, fs.ErrNotExist) {
		return true // exited since Alive looked
	}
	return err == nil && id != f[2] // the pid now names another process
}
