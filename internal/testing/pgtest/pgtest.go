// Package pgtest owns the real PostgreSQL servers that tests run against: it
// finds the server binaries (initdb, postgres), creates a throwaway cluster in
// a temporary directory, starts it on a free 127.0.0.1 port (as an unprivileged
// user when the test runs as root, which PostgreSQL requires) and stops and
// removes it afterwards. NewDatabase gives each test a fresh database of its
// own on that cluster.
//
// Start gives a test a cluster of its own; StartWith one on a small disk of
// its own, which the test can fill (FillDisk) and free (FreeDisk). Shared
// gives every test of a test binary the same cluster, started on first use;
// the package's TestMain must then run the tests through Run, which stops it:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }
//
// When no server is installed the tests are skipped, unless the environment
// variable PLUGBOARD_REQUIRE_POSTGRES is set (CI sets it): then they fail,
// naming build/install-postgresql.sh, which installs one.
//
// A cluster never outlives its test binary: the postmaster is the binary's
// own child (not daemonized by pg_ctl) and gets SIGQUIT, PostgreSQL's
// immediate shutdown, from the kernel if the binary dies (PR_SET_PDEATHSIG);
// a stop that SIGQUIT does not finish in time ends with SIGKILL; directories
// that crashed binaries left behind are removed by the next Start.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// RequireEnv names the environment variable that turns a missing server from
// a skip into a failure.
const RequireEnv = "PLUGBOARD_REQUIRE_POSTGRES"

// User is the cluster's superuser; it connects without a password (trust).
const User = "plugboard"

const (
	dirPattern   = "plugboard-pgtest-*"
	startTimeout = 60 * time.Second
	portAttempts = 5
)

// stopTimeout is how long Stop waits after SIGQUIT before it sends SIGKILL.
var stopTimeout = 10 * time.Second

// Server is a running throwaway PostgreSQL cluster.
type Server struct {
	port    int
	root    string // the temporary directory holding data, socket and log
	mounted bool   // root is a tmpfs of its own (Options.DiskBytes)
	proc    *os.Process

	exited   chan struct{} // closed when the postmaster has been reaped
	stopOnce sync.Once
	dbSeq    atomic.Int64
}

// Installed skips t (or fails it, under PLUGBOARD_REQUIRE_POSTGRES) when no
// PostgreSQL server is installed, as Start would, without starting one.
func Installed(t testing.TB) {
	t.Helper()
	binaries(t)
}

// Start starts a cluster for t alone, stopped and removed when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// Options are a cluster's departures from Start's defaults.
type Options struct {
	// DiskBytes, when positive, puts the whole cluster (data, WAL, socket
	// and log) on a tmpfs of that size mounted for it alone, so that a
	// test can run the server out of disk (FillDisk) without touching
	// anyone else's. Mounting needs root: t is skipped otherwise.
	DiskBytes int64
}

// StartWith is Start with opts.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	bin := binaries(t)
	if opts.DiskBytes > 0 && os.Geteuid() != 0 {
		t.Skip("pgtest: a cluster on a disk of its own mounts a tmpfs, which needs root")
	}
	s, err := start(bin, opts)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// fillerName is the file FillDisk writes in a small-disk cluster's root.
const fillerName = "filler"

// FillDisk takes every free byte of the cluster's own disk (Options.
// DiskBytes) with a file of the test's, as another tenant of a shared
// volume would: from then on the server's writes that need new space fail
// with ENOSPC. It returns the bytes it took.
func (s *Server) FillDisk() (int64, error) {
	if !s.mounted {
		return 0, errors.New("pgtest: FillDisk needs a cluster started with Options.DiskBytes")
	}
	f, err := os.OpenFile(filepath.Join(s.root, fillerName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	// Big writes first, then page-sized ones for the last scraps: a
	// tmpfs allocates whole pages, so nothing smaller is left after.
	for _, size := range []int{1 << 20, 4096} {
		buf := make([]byte, size)
		for {
			w, err := f.Write(buf)
			n += int64(w)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// FreeDisk gives back the space FillDisk took.
func (s *Server) FreeDisk() error {
	err := os.Remove(filepath.Join(s.root, fillerName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

var shared struct {
	running atomic.Bool // Run is running the tests
	once    sync.Once
	srv     *Server
	err     error
}

// Shared returns the test binary's shared cluster, starting it on first use.
// The package's TestMain must run the tests through Run, which stops it.
func Shared(t testing.TB) *Server {
	t.Helper()
	if !shared.running.Load() {
		t.Fatal("pgtest.Shared needs the package's TestMain to run the tests through pgtest.Run(m)")
	}
	bin := binaries(t)
	shared.once.Do(func() { shared.srv, shared.err = start(bin, Options{}) })
	if shared.err != nil {
		t.Fatalf("pgtest: shared server: %v", shared.err)
	}
	return shared.srv
}

// Run runs the tests (m.Run), then stops the shared cluster if one was
// started, and returns m.Run's exit code.
func Run(m *testing.M) int {
	shared.running.Store(true)
	defer shared.running.Store(false)
	code := m.Run()
	if shared.srv != nil {
		shared.srv.Stop()
	}
	return code
}

// Port is the TCP port the server listens on, at 127.0.0.1.
func (s *Server) Port() int { return s.port }

// PID is the postmaster's process ID.
func (s *Server) PID() int { return s.proc.Pid }

// URL is the connection URL of the cluster's "postgres" database.
func (s *Server) URL() string { return s.dbURL("postgres") }

func (s *Server) dbURL(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", User, s.port, db)
}

var unsafeName = regexp.MustCompile(`[^a-z0-9_]+`)

// NewDatabase creates a database for t alone and returns its URL; it is
// dropped (closing any connections left open) when t ends.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%s", s.dbSeq.Add(1), unsafeName.ReplaceAllString(strings.ToLower(t.Name()), "_"))
	if len(name) > 63 { // NAMEDATALEN-1
		name = name[:63]
	}
	ident := pgx.Identifier{name}.Sanitize()
	if err := s.exec("CREATE DATABASE " + ident); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := s.exec("DROP DATABASE IF EXISTS " + ident + " WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return s.dbURL(name)
}

// exec runs one statement in the postgres database.
func (s *Server) exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// Stop shuts the server down (immediately: nothing of a throwaway cluster
// needs to survive) and removes its directory. It is idempotent.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		// os.Process.Signal does nothing once the process has been reaped.
		_ = s.proc.Signal(syscall.SIGQUIT)
		select {
		case <-s.exited:
		case <-time.After(stopTimeout):
			// The postmaster leads a process group of its own (Setpgid):
			// kill it and its backends together.
			_ = syscall.Kill(-s.proc.Pid, syscall.SIGKILL)
			_ = s.proc.Signal(syscall.SIGKILL)
			<-s.exited
		}
		if s.mounted {
			// Lazily: a test's stray process in it must not keep the
			// mount (and its memory) alive.
			_ = syscall.Unmount(s.root, syscall.MNT_DETACH)
		}
		_ = os.RemoveAll(s.root)
	})
}

// binaries returns the directory holding initdb and postgres, or skips or
// fails t when there is none.
func binaries(t testing.TB) string {
	t.Helper()
	if dir := findBinaries(); dir != "" {
		return dir
	}
	msg := "pgtest: no PostgreSQL server found (initdb and postgres in PATH or /usr/lib/postgresql/*/bin)"
	if os.Getenv(RequireEnv) != "" {
		t.Fatalf("%s, and %s is set; install one with build/install-postgresql.sh", msg, RequireEnv)
	}
	t.Skipf("%s; install one with build/install-postgresql.sh, set %s=1 to fail instead of skipping", msg, RequireEnv)
	return ""
}

func findBinaries() string {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	// Debian's layout, /usr/lib/postgresql/<major>/bin: newest first.
	if ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin"); len(ms) > 0 {
		ver := func(d string) float64 {
			v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(d)), 64)
			return v
		}
		sort.Slice(ms, func(i, j int) bool { return ver(ms[i]) > ver(ms[j]) })
		dirs = append(dirs, ms...)
	}
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d
		}
	}
	return ""
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// runAs is the unprivileged user the server runs as when the test runs as
// root (PostgreSQL refuses to run as root), or nil.
type runAs struct {
	cred *syscall.Credential
	uid  int
	gid  int
}

func pickUser() (*runAs, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &runAs{
			cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}},
			uid:  uid, gid: gid,
		}, nil
	}
	return nil, errors.New(`running as root, and neither user "postgres" nor "nobody" exists to run the server as`)
}

// start creates and starts a cluster with the binaries in bin.
func start(bin string, opts Options) (*Server, error) {
	sweepStale()
	as, err := pickUser()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", dirPattern)
	if err != nil {
		return nil, err
	}
	mounted := false
	if opts.DiskBytes > 0 {
		// mode 0700 as MkdirTemp made it; chowned below like any root.
		if err := syscall.Mount("tmpfs", root, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV,
			fmt.Sprintf("size=%d,mode=0700", opts.DiskBytes)); err != nil {
			_ = os.Remove(root)
			return nil, fmt.Errorf("mount a tmpfs of %d bytes on %s: %w", opts.DiskBytes, root, err)
		}
		mounted = true
	}
	ok := false
	defer func() {
		if !ok {
			if mounted {
				_ = syscall.Unmount(root, syscall.MNT_DETACH)
			}
			_ = os.RemoveAll(root)
		}
	}()
	// The owner file names this process, so that sweepStale in a later run
	// knows the directory is stale once the process is gone.
	if err := os.WriteFile(filepath.Join(root, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	sock := filepath.Join(root, "sock")
	if err := os.Mkdir(sock, 0o700); err != nil {
		return nil, err
	}
	if as != nil {
		// os.MkdirTemp's parent (normally /tmp) is world-traversable, and
		// root is handed to the server's user whole.
		for _, p := range []string{root, sock} {
			if err := os.Chown(p, as.uid, as.gid); err != nil {
				return nil, err
			}
		}
	}
	env := serverEnv(root)

	data := filepath.Join(root, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", User,
		"--no-sync", "-E", "UTF8", "--locale=C")
	initdb.Dir, initdb.Env = root, env
	if as != nil {
		initdb.SysProcAttr = &syscall.SysProcAttr{Credential: as.cred}
	}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}

	var lastErr error
	for attempt := 0; attempt < portAttempts; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s, retry, err := launch(bin, root, data, sock, port, env, as)
		if err == nil {
			ok = true
			s.mounted = mounted
			return s, nil
		}
		lastErr = err
		if !retry {
			break
		}
	}
	return nil, lastErr
}

func serverEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PG") || strings.HasPrefix(k, "LC_") || k == "LANG" || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "LC_ALL=C")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// launch starts the postmaster on port and waits until it accepts
// connections. retry reports that the port was taken meanwhile.
func launch(bin, root, data, sock string, port int, env []string, as *runAs) (s *Server, retry bool, err error) {
	logPath := filepath.Join(root, "log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, false, err
	}
	defer logf.Close()

	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-p", strconv.Itoa(port), "-k", sock,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		// DSM segments in the data directory, not /dev/shm, so that a
		// killed server leaves nothing outside it.
		"-c", "dynamic_shared_memory_type=mmap")
	cmd.Dir, cmd.Env = root, env
	cmd.Stdout, cmd.Stderr = logf, logf
	// The kernel sends SIGQUIT (immediate shutdown) to the postmaster when
	// the thread that started it ends, which is when this process ends: the
	// goroutine below keeps that thread locked and alive until Stop.
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if as != nil {
		attr.Credential = as.cred
	}
	cmd.SysProcAttr = attr

	s = &Server{port: port, root: root, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The thread stays locked to this goroutine, so alive, for as
		// long as the postmaster runs.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(s.exited)
	}()
	if err := <-started; err != nil {
		return nil, false, fmt.Errorf("start postgres: %v", err)
	}
	s.proc = cmd.Process

	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-s.exited:
			out, _ := os.ReadFile(logPath)
			retry = strings.Contains(string(out), "could not bind") || strings.Contains(string(out), "already in use")
			return nil, retry, fmt.Errorf("postgres exited at startup (port %d):\n%s", port, out)
		default:
		}
		if ready(s) {
			return s, false, nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			out, _ := os.ReadFile(logPath)
			return nil, false, fmt.Errorf("postgres not ready after %v (port %d):\n%s", startTimeout, port, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ready(s *Server) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		return false
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx) == nil
}

// sweepStale removes the directories of clusters whose test binary is gone
// (it crashed, or was killed, before it could remove them). The kernel has
// stopped such a cluster's server already (PR_SET_PDEATHSIG).
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPattern))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "owner"))
		if err != nil {
			// Just created (the owner file comes next), or not ours.
			if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > time.Hour {
				_ = os.RemoveAll(d)
			}
			continue
		}
		owner, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || owner == os.Getpid() || alive(owner) {
			continue
		}
		if pid := postmasterPID(filepath.Join(d, "data")); pid > 0 && alive(pid) {
			continue // a live server after all: leave it
		}
		// A small-disk cluster's tmpfs (an error when d is no mount point).
		_ = syscall.Unmount(d, syscall.MNT_DETACH)
		_ = os.RemoveAll(d)
	}
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// postmasterPID reads the first line of the cluster's postmaster.pid.
func postmasterPID(data string) int {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}
