package board

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/datadir"
	"github.com/plugboard/plugboard/host/internal/store"
)

// Several hosts on one store. Each host (a data directory: its worktrees
// and git dirs are local to it) has an id kept in DATA/host-id; each
// process serving it holds a lease in the store (its owner string,
// renewed every hostHeartbeat). An attempt records the host that created
// its worktree: operations that need the worktree or the processes —
// stop, follow-up, changes, patch, file, approve, request changes — run
// there. A call that reaches another host is queued through the store
// (host_commands) for a live process of the attempt's host, which runs it
// and writes the answer back; the caller's host waits for it within the
// call's deadline. Queuing through the store needs no listener, address or
// credential between hosts, and works wherever the store is reachable
// (docs/DECISIONS.md). Every host sweeps: a running process whose owner
// is gone (its pid is dead on this machine, or, on another machine, its
// lease is older than hostLeaseTTL) is marked killed.

const (
	// hostHeartbeat is how often a host renews its lease and sweeps.
	hostHeartbeat = 5 * time.Second
	// hostLeaseTTL is the age past which another machine's lease is dead:
	// its processes are marked killed at the next sweep (within
	// hostLeaseTTL + hostHeartbeat of its last heartbeat).
	hostLeaseTTL = 20 * time.Second
	// commandPoll is how often a host looks for commands queued for it
	// and a forwarding caller for their answer, on a store without
	// signals (SQLite).
	commandPoll = 50 * time.Millisecond
	// commandPollFallback replaces commandPoll on a store with signals
	// (PostgreSQL's LISTEN/NOTIFY), which wake both sides at once: the
	// poll only catches a signal that was missed.
	commandPollFallback = time.Second
)

// commandPollEvery is how often commands and their answers are polled for
// on this board's store.
func (b *Board) commandPollEvery() time.Duration {
	if b.store.Notifies() {
		return commandPollFallback
	}
	return commandPoll
}

// hostIDFile holds a data directory's host id.
const hostIDFile = "host-id"

// hostIDOf returns the host id of dataDir, creating it on first use.
func hostIDOf(dataDir string) (string, error) {
	file := filepath.Join(dataDir, hostIDFile)
	if b, err := os.ReadFile(file); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	id := "host-" + hex.EncodeToString(raw[:])
	if err := datadir.Prepare(dataDir); err != nil {
		return "", err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return "", err
	}
	// Link, not rename: of two processes creating it at once, one wins and
	// the other reads the winner's id.
	if err := os.Link(tmp, file); err != nil {
		os.Remove(tmp)
		if b, err := os.ReadFile(file); err == nil {
			if id := strings.TrimSpace(string(b)); id != "" {
				return id, nil
			}
		}
		return "", fmt.Errorf("host id %s: %w", file, err)
	}
	os.Remove(tmp)
	return id, nil
}

// HostID is this board's host id.
func (b *Board) HostID() string { return b.hostID }

// startHosts renews this process's lease, sweeps the processes of gone
// hosts and runs the commands other hosts queue for this one, until
// Close.
func (b *Board) startHosts() {
	ctx, cancel := context.WithCancel(context.Background())
	b.stopHosts = cancel
	b.hostsDone = make(chan struct{})
	b.notePeers(ctx)
	go func() {
		defer close(b.hostsDone)
		beat := time.NewTicker(hostHeartbeat)
		defer beat.Stop()
		// A command queued for this host signals it where the store can
		// (PostgreSQL). Commands are polled for only while another process
		// holds a lease: alone on the store, nobody queues any for this
		// host, and a host idle for hours should not wake 20 times a
		// second.
		queued, unsubscribe := b.store.Subscribe(store.SignalHostCommand)
		defer unsubscribe()
		var pollTicker *time.Ticker
		var poll <-chan time.Time
		setPoll := func() {
			switch peers := b.peers.Load(); {
			case peers && pollTicker == nil:
				pollTicker = time.NewTicker(b.commandPollEvery())
				poll = pollTicker.C
			case !peers && pollTicker != nil:
				pollTicker.Stop()
				pollTicker, poll = nil, nil
			}
		}
		setPoll()
		defer func() {
			if pollTicker != nil {
				pollTicker.Stop()
			}
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case <-beat.C:
				if err := b.store.HeartbeatHost(ctx, b.owner, b.hostID); err != nil && ctx.Err() == nil {
					b.log.Warn("host lease not renewed", "err", err)
				}
				b.notePeers(ctx)
				setPoll()
				if _, err := b.sweep(ctx); err != nil && ctx.Err() == nil {
					b.log.Warn("sweep of gone hosts' processes failed", "err", err)
				}
				// A command's caller waits at most its call's deadline.
				if err := b.store.PruneHostCommands(ctx, store.FormatTime(time.Now().Add(-time.Hour))); err != nil && ctx.Err() == nil {
					b.log.Warn("old host commands not pruned", "err", err)
				}
			case <-poll:
				b.runCommands(ctx)
			case hostID := <-queued:
				if hostID == "" || hostID == b.hostID {
					b.runCommands(ctx)
				}
			}
		}
	}()
}

// notePeers records whether another process holds a fresh lease: only
// then are commands polled for (a host that joins is noticed within a
// heartbeat, well inside a forwarded call's deadline).
func (b *Board) notePeers(ctx context.Context) {
	live, err := b.liveOwners(ctx)
	if err != nil {
		return
	}
	others := false
	for owner := range live {
		if owner != b.owner {
			others = true
		}
	}
	b.peers.Store(others)
}

// liveOwners returns the owners whose lease is fresh.
func (b *Board) liveOwners(ctx context.Context) (map[string]string, error) {
	return b.store.LiveHosts(ctx, store.FormatTime(time.Now().Add(-hostLeaseTTL)))
}

// ownerGone reports whether the process that owns a record is gone: on
// this machine its pid tells for sure; another machine's owner is gone
// when its lease has lapsed.
func (b *Board) ownerGone(owner string, live map[string]string) bool {
	if owner == b.owner || ownerAlive(owner) {
		return false
	}
	if sameMachine(owner, b.owner) {
		return true
	}
	_, ok := live[owner]
	return !ok
}

// sameMachine reports whether two owners ("pid/boot/starttime") ran under
// one boot of one machine, where a pid check is authoritative.
func sameMachine(a, b string) bool {
	boot := func(o string) string {
		parts := strings.SplitN(o, "/", 3)
		if len(parts) < 3 {
			return ""
		}
		return parts[1]
	}
	return boot(a) != "" && boot(a) == boot(b)
}

// hostAlive reports whether some process serving hostID holds a fresh
// lease.
func hostAlive(live map[string]string, hostID string) bool {
	for _, h := range live {
		if h == hostID {
			return true
		}
	}
	return false
}

// Forwarded operations: what runs on the attempt's host.
const (
	opStop           = "stop_attempt"
	opFollowUp       = "follow_up"
	opChanges        = "get_attempt_changes"
	opPatch          = "get_attempt_patch"
	opFile           = "get_attempt_file"
	opApprove        = "approve_attempt"
	opRequestChanges = "request_changes"
)

// remoteHost returns the host that holds the attempt's worktree when it is
// not this one ("" when it is this one, or the attempt predates hosts).
func (b *Board) remoteHost(ctx context.Context, at store.Attempt) string {
	if _, forwarded := forwardedFrom(ctx); forwarded || at.HostID == "" || at.HostID == b.hostID {
		return ""
	}
	return at.HostID
}

// remoteAttempt is remoteHost for an attempt known by id.
func (b *Board) remoteAttempt(ctx context.Context, attemptID string) string {
	at, err := b.store.GetAttempt(ctx, attemptID)
	if err != nil {
		return ""
	}
	return b.remoteHost(ctx, at)
}

// forwardedKey marks the context of a command run for another host: it
// runs here whatever the attempt's record says.
type forwardedKey struct{}

func forwardedFrom(ctx context.Context) (string, bool) {
	from, ok := ctx.Value(forwardedKey{}).(string)
	return from, ok
}

// forward runs op with args on hostID and decodes its answer into out.
func (b *Board) forward(ctx context.Context, hostID, op string, args, out any) (err error) {
	if m := b.cfg.Metrics; m != nil {
		start := time.Now()
		defer func() { m.Forwarded(op, err, time.Since(start)) }()
	}
	live, err := b.liveOwners(ctx)
	if err != nil {
		return fmt.Errorf("board: forward %s: %w", op, err)
	}
	if !hostAlive(live, hostID) {
		env := abi.NewEnvelope(abi.CodeUnavailable,
			fmt.Sprintf("the attempt's worktree is on host %s, which is not running", hostID),
			"start plugboard on that host (its data directory holds the attempt), then call again")
		env.Retryable = true
		env.Details = map[string]any{"host_id": hostID}
		return env
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	id := store.NewID()
	// Subscribed before queuing, so that the answer's signal cannot come
	// first.
	answered, unsubscribe := b.store.Subscribe(store.SignalCommandDone)
	defer unsubscribe()
	if err := b.store.EnqueueHostCommand(ctx, store.HostCommand{ID: id, HostID: hostID, Op: op, Args: string(raw), From: b.hostID}); err != nil {
		return fmt.Errorf("board: forward %s: %w", op, err)
	}
	t := time.NewTicker(b.commandPollEvery())
	defer t.Stop()
	for {
		select {
		case key := <-answered:
			if key != "" && key != id {
				continue
			}
		case <-ctx.Done():
			_ = b.store.CancelHostCommand(context.WithoutCancel(ctx), id)
			env := abi.NewEnvelope(abi.CodeUnavailable,
				fmt.Sprintf("host %s did not answer %s in time: %v", hostID, op, ctx.Err()),
				"call again; if it keeps failing, check that host's plugboard log")
			env.Retryable = true
			return env
		case <-t.C:
		}
		c, err := b.store.GetHostCommand(ctx, id)
		if err != nil {
			return fmt.Errorf("board: forward %s: %w", op, err)
		}
		if c.State != store.HostCommandDone {
			continue
		}
		if c.Error != "" {
			var env abi.Envelope
			if json.Unmarshal([]byte(c.Error), &env) == nil && env.Code != "" {
				return &env
			}
			return errors.New(c.Error)
		}
		return json.Unmarshal([]byte(c.Result), out)
	}
}

// runCommands runs the commands queued for this host.
func (b *Board) runCommands(ctx context.Context) {
	cmds, err := b.store.ClaimHostCommands(ctx, b.hostID, b.owner, 8)
	if err != nil {
		if ctx.Err() == nil {
			b.log.Warn("host commands not read", "err", err)
		}
		return
	}
	for _, c := range cmds {
		b.chains.Add(1)
		b.pending.Add(1)
		go func() {
			defer b.chains.Done()
			defer b.pending.Add(-1)
			result, errText := b.runCommand(ctx, c)
			if err := b.store.FinishHostCommand(context.WithoutCancel(ctx), c.ID, result, errText); err != nil {
				b.log.Warn("host command answer not written", "op", c.Op, "err", err)
			}
		}()
	}
}

// hostOps are the operations another host may queue for this one, each
// decoding its JSON arguments into the board method's own.
var hostOps = map[string]func(b *Board, ctx context.Context, args []byte) (any, error){
	opStop:           hostOp((*Board).StopAttempt),
	opFollowUp:       hostOp((*Board).FollowUp),
	opChanges:        hostOp((*Board).GetAttemptChanges),
	opPatch:          hostOp((*Board).GetAttemptPatch),
	opFile:           hostOp((*Board).GetAttemptFile),
	opApprove:        hostOp((*Board).ApproveAttempt),
	opRequestChanges: hostOp((*Board).RequestChanges),
}

func hostOp[A, R any](method func(*Board, context.Context, A) (R, error)) func(*Board, context.Context, []byte) (any, error) {
	return func(b *Board, ctx context.Context, raw []byte) (any, error) {
		var a A
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("bad arguments: %w", err)
		}
		return method(b, ctx, a)
	}
}

// runCommand runs one forwarded operation and returns its answer or its
// error, as JSON.
func (b *Board) runCommand(ctx context.Context, c store.HostCommand) (result, errText string) {
	ctx = context.WithValue(ctx, forwardedKey{}, c.From)
	var out any
	err := fmt.Errorf("unknown host command %q", c.Op)
	if op, ok := hostOps[c.Op]; ok {
		out, err = op(b, ctx, []byte(c.Args))
	}
	if err != nil {
		var env *abi.Envelope
		if errors.As(err, &env) {
			raw, _ := json.Marshal(env)
			return "", string(raw)
		}
		return "", err.Error()
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return "", err.Error()
	}
	return string(raw), ""
}

// HostInfo is one host sharing the store, as an operator sees it: whether
// a process serving it holds a fresh lease, how many do, when one last
// renewed its lease, and how many attempts with a running process its
// worktrees hold.
type HostInfo struct {
	HostID string `json:"host_id"`
	// This is the host of the data directory this board was opened on.
	This bool `json:"this"`
	// Alive: a process serving it is running — on this machine its pid
	// tells, on another its lease renewed within hostLeaseTTL; Processes
	// counts those.
	Alive     bool `json:"alive"`
	Processes int  `json:"processes"`
	// LastSeen is the newest lease renewal ("" when no lease is stored).
	LastSeen        string `json:"last_seen"`
	RunningAttempts int    `json:"running_attempts"`
	// Sandbox is what confines this host's attempt processes
	// (SandboxMode); only This host's is known.
	Sandbox string `json:"sandbox,omitempty"`
}

// Hosts lists the hosts sharing the store: those with a stored lease and
// those whose worktrees hold an attempt with a running process, by host id.
// A host with running attempts that is not alive is one whose processes
// the sweep is about to mark killed. countSelf says whether this process
// is one of its host's: a server is; a one-shot command, which holds a
// lease only while its board is open, is not, and its lease is left out.
func (b *Board) Hosts(ctx context.Context, countSelf bool) ([]HostInfo, error) {
	leases, err := b.store.HostLeases(ctx)
	if err != nil {
		return nil, fmt.Errorf("board: hosts: %w", err)
	}
	running, err := b.store.RunningAttemptsByHost(ctx)
	if err != nil {
		return nil, fmt.Errorf("board: hosts: %w", err)
	}
	fresh := store.FormatTime(time.Now().Add(-hostLeaseTTL))
	live := map[string]string{}
	for _, l := range leases {
		if l.HeartbeatAt >= fresh {
			live[l.Owner] = l.HostID
		}
	}
	byID := map[string]*HostInfo{}
	get := func(id string) *HostInfo {
		if byID[id] == nil {
			byID[id] = &HostInfo{HostID: id, This: id == b.hostID}
			if id == b.hostID {
				byID[id].Sandbox = b.SandboxMode()
			}
		}
		return byID[id]
	}
	for _, l := range leases {
		h := get(l.HostID)
		if l.Owner == b.owner && !countSelf {
			continue
		}
		// As the sweep judges: on this machine a dead pid is gone at
		// once, whatever its lease says.
		if !b.ownerGone(l.Owner, live) {
			h.Alive = true
			h.Processes++
		}
		h.LastSeen = max(h.LastSeen, l.HeartbeatAt)
	}
	for id, n := range running {
		if id != "" {
			get(id).RunningAttempts = n
		}
	}
	out := make([]HostInfo, 0, len(byID))
	for _, h := range byID {
		out = append(out, *h)
	}
	slices.SortFunc(out, func(a, b HostInfo) int { return strings.Compare(a.HostID, b.HostID) })
	return out, nil
}
