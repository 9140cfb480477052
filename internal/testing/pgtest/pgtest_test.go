package pgtest

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestMain(m *testing.M) { os.Exit(Run(m)) }

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestSharedDatabasesAreIsolated writes a row in one database of the shared
// cluster and checks that another database does not see it.
func TestSharedDatabasesAreIsolated(t *testing.T) {
	s := Shared(t)
	if s2 := Shared(t); s2 != s {
		t.Fatal("Shared started a second cluster")
	}
	urlA, urlB := s.NewDatabase(t), s.NewDatabase(t)
	if urlA == urlB {
		t.Fatalf("NewDatabase returned %s twice", urlA)
	}
	ctx := context.Background()

	a := connect(t, urlA)
	if _, err := a.Exec(ctx, `CREATE TABLE items (id int PRIMARY KEY, name text)`); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exec(ctx, `INSERT INTO items VALUES (1, 'only in a')`); err != nil {
		t.Fatal(err)
	}
	var name string
	if err := a.QueryRow(ctx, `SELECT name FROM items WHERE id = 1`).Scan(&name); err != nil || name != "only in a" {
		t.Fatalf("read back from a: %q, %v", name, err)
	}

	b := connect(t, urlB)
	var found *string
	if err := b.QueryRow(ctx, `SELECT to_regclass('public.items')::text`).Scan(&found); err != nil {
		t.Fatal(err)
	}
	if found != nil {
		t.Fatalf("database b sees table %s of database a", *found)
	}

	// The server must not run as root (PostgreSQL refuses to anyway).
	if os.Geteuid() == 0 {
		if uid := processUID(t, s.PID()); uid == 0 {
			t.Fatal("postmaster runs as root")
		}
	}
}

// TestNewDatabaseDroppedAtCleanup checks that a test's database is dropped,
// even with a connection to it left open.
func TestNewDatabaseDroppedAtCleanup(t *testing.T) {
	s := Shared(t)
	var name string
	outer := t
	t.Run("sub", func(t *testing.T) {
		url := s.NewDatabase(t)
		c, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		outer.Cleanup(func() { c.Close(context.Background()) }) // still open at the drop
		if err := c.QueryRow(context.Background(), `SELECT current_database()`).Scan(&name); err != nil {
			t.Fatal(err)
		}
	})
	c := connect(t, s.URL())
	var n int
	if err := c.QueryRow(context.Background(), `SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if name == "" || n != 0 {
		t.Fatalf("database %q still exists (%d) after its test ended", name, n)
	}
}

// TestStartStop starts a cluster of its own, stops it and checks that the
// server is gone: port closed, process ended, directory removed.
func TestStartStop(t *testing.T) {
	s := Start(t)
	connect(t, s.URL()).Close(context.Background())
	checkStop(t, s)
}

// TestStopKillsAStuckServer checks the fallback: a postmaster that does not
// end on SIGQUIT (here, because it is stopped) is killed.
func TestStopKillsAStuckServer(t *testing.T) {
	s := Start(t)
	old := stopTimeout
	stopTimeout = 500 * time.Millisecond
	t.Cleanup(func() { stopTimeout = old })
	if err := syscall.Kill(s.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	checkStop(t, s)
}

func checkStop(t *testing.T, s *Server) {
	t.Helper()
	pid, root := s.PID(), s.root
	start := time.Now()
	s.Stop()
	t.Logf("stopped in %v", time.Since(start))
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.Port()), time.Second); err == nil {
		c.Close()
		t.Fatalf("port %d still accepts connections after Stop", s.Port())
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("postmaster %d still exists after Stop (kill 0: %v)", pid, err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("cluster directory %s still exists after Stop (%v)", root, err)
	}
}

func processUID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			uid, _ := strconv.Atoi(f[1])
			return uid
		}
	}
	t.Fatalf("no Uid in /proc/%d/status", pid)
	return -1
}

const crashChildEnv = "PGTEST_CRASH_CHILD"

// TestCrashedBinaryLeavesNoServer runs a test binary that starts a cluster
// and then dies by SIGKILL, without any cleanup: the kernel must stop its
// server (PR_SET_PDEATHSIG), and the next start must remove its directory.
func TestCrashedBinaryLeavesNoServer(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		s := Start(t)
		os.Stdout.WriteString("CLUSTER " + strconv.Itoa(s.PID()) + " " + s.root + "\n")
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	binaries(t) // skip (or fail) like the others when there is no server
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashedBinaryLeavesNoServer$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"=1")
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != -1 {
		t.Fatalf("child: want death by SIGKILL, got %v; output:\n%s", err, out)
	}
	var pid int
	var root string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "CLUSTER" {
			pid, _ = strconv.Atoi(f[1])
			root = f[2]
		}
	}
	if pid == 0 {
		t.Fatalf("child printed no cluster; output:\n%s", out)
	}
	t.Cleanup(func() { os.RemoveAll(root) })

	deadline := time.Now().Add(15 * time.Second)
	for running(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("postmaster %d of the crashed binary still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(root); err != nil {
		t.Fatalf("crashed binary's directory %s: %v (want it left behind, for the sweep)", root, err)
	}
	sweepStale()
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("sweepStale left %s (%v)", root, err)
	}
}

// running reports whether pid is a process that has not exited (a zombie
// waiting for its new parent to reap it counts as exited).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// TestSmallDisk: a cluster on a disk of its own runs out of space when the
// test fills it — a table that must grow fails with PostgreSQL's
// disk_full — works again once FreeDisk gives the space back, and Stop
// unmounts and removes its directory.
func TestSmallDisk(t *testing.T) {
	s := StartWith(t, Options{DiskBytes: 96 << 20})
	// The postgres database: NewDatabase's drop would come after the
	// Stop this test checks.
	c := connect(t, s.URL())
	ctx := context.Background()
	if _, err := c.Exec(ctx, `CREATE TABLE big (b text)`); err != nil {
		t.Fatal(err)
	}
	took, err := s.FillDisk()
	if err != nil || took == 0 {
		t.Fatalf("FillDisk: %d bytes, %v", took, err)
	}
	// Incompressible rows bigger than a page: the table (its TOAST
	// table) must grow.
	grow := `INSERT INTO big SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 2000)`
	_, err = c.Exec(ctx, grow)
	if code := pgCode(err); code != "53100" {
		t.Fatalf("insert on a full disk: %v, want SQLSTATE 53100", err)
	}
	if err := s.FreeDisk(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, grow); err != nil {
		t.Fatalf("insert once freed: %v", err)
	}
	var mounts []byte
	if mounts, err = os.ReadFile("/proc/self/mounts"); err != nil || !strings.Contains(string(mounts), " "+s.root+" tmpfs ") {
		t.Fatalf("%s is not a tmpfs mount (%v)", s.root, err)
	}
	c.Close(ctx)
	checkStop(t, s)
	if mounts, _ = os.ReadFile("/proc/self/mounts"); strings.Contains(string(mounts), " "+s.root+" ") {
		t.Fatalf("%s is still mounted after Stop", s.root)
	}
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
