// Package dashboard owns the web dashboard `plugboard serve --http` serves at
// "/" on the MCP listener: its embedded pages (no CDN, works offline), the
// login that turns a bearer token into a session cookie, the CSRF check of
// every state-changing request, and the small JSON API the pages use. Every
// board action goes through the dispatcher like an MCP call (policy,
// validation, request_id, decision log) as the signed-in identity; the
// operator's reads (decision log, human inbox, plugins) are open only to the
// local identity and SUPERVISORs.
package dashboard

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/policy"
)

//go:embed assets
var assets embed.FS

// Paths the dashboard serves on the MCP listener.
const (
	// Prefix holds the assets and the API; "/" is the page itself.
	Prefix  = "/ui/"
	apiPath = Prefix + "api/"
	// CookieName is the session cookie; CSRFHeader carries the session's
	// CSRF token on every state-changing request.
	CookieName = "plugboard_session"
	CSRFHeader = "X-Plugboard-CSRF"
)

// Limits of sessions and bodies.
const (
	// sessionIdle ends a session unused this long; sessionLifetime ends
	// any session this long after its sign-in, as its cookie's Max-Age
	// does in the browser (the lifetime is under the session's MAC, the
	// seen time is not).
	sessionIdle     = 12 * time.Hour
	sessionLifetime = 12 * time.Hour
	// maxSessionsPerIdentity is how many sessions one identity keeps; its
	// next sign-in ends its own least recently seen. There is no cap over
	// all identities: a sign-in must never sign someone else out, and the
	// sessions are bounded anyway, by this cap times the configured
	// tokens' identities.
	maxSessionsPerIdentity = 32
	// maxSessionCookies is how many session cookies one request may
	// present (see presented); a request with more is signed in as no one.
	maxSessionCookies = 4
	maxBody           = 1 << 20
)

// Options configures New.
type Options struct {
	// Tokens maps each bearer token that may sign in to its identity. Nil
	// (or empty) means the listener needs no token (loopback without one):
	// the page opens as Local at once.
	Tokens map[string]string
	// Sessions keeps the signed-in sessions; nil keeps them in this
	// process's memory (see Sessions).
	Sessions Sessions
	// Local is the operator's identity, used without Authenticate.
	Local *abi.Caller
	// Callers maps an identity to its caller (role); nil answers give a
	// caller without a role.
	Callers func(identity string) *abi.Caller
	// Call runs a tool through the host's pipeline as caller and returns
	// the structured result, or the envelope.
	Call func(ctx context.Context, caller *abi.Caller, tool string, args json.RawMessage) (json.RawMessage, *abi.Envelope)
	// Tools lists the tools caller may call (name, title, description,
	// input schema).
	Tools func(caller *abi.Caller) []Tool
	// Decisions lists the decision log's rows f selects, newest first,
	// and Decision reads one row whole (operator only).
	Decisions func(ctx context.Context, f DecisionQuery) (any, error)
	Decision  func(ctx context.Context, id string) (any, error)
	// Inbox, ReadMail and ReplyMail serve the human inbox (operator only).
	Inbox     func(ctx context.Context, includeRead bool) (any, error)
	ReadMail  func(ctx context.Context, mailID string) (any, error)
	ReplyMail func(ctx context.Context, mailID, body string) (any, error)
	// Plugins describes the served plugins (operator only).
	Plugins func(ctx context.Context) any
	// Hosts lists the hosts sharing the board's store (operator only).
	Hosts func(ctx context.Context) (any, error)
	// Board lists a project's tasks for the board view as caller, only
	// those its scope reaches (callers policy lets call list_tasks).
	Board func(ctx context.Context, caller *abi.Caller, projectID string) (any, error)
	// Marks reads the live marks (MarkCards, MarkLogs, …) of projects and
	// attempts for the event streams (events.go); nil serves no stream.
	Marks func(ctx context.Context, projects, attempts []string) (map[string]string, error)
	// CreateProject and AddRepo set projects up (operator only), as
	// caller, who is recorded in the decision log.
	CreateProject func(ctx context.Context, caller *abi.Caller, name string, repos []RepoInput) (any, error)
	AddRepo       func(ctx context.Context, caller *abi.Caller, projectID string, repo RepoInput) (any, error)
	Logger        *slog.Logger
}

// RepoInput is a repository given on the page: a path on the host.
type RepoInput struct {
	Path        string `json:"path"`
	DisplayName string `json:"display_name,omitempty"`
}

// Tool is a tool as the dashboard lists it.
type Tool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// DecisionQuery filters the decision log; its fields combine, and an
// empty one selects every row.
type DecisionQuery struct {
	// Agent is the caller's identity.
	Agent, Tool string
	// Status is "ok", "error" or "invoked" (not finished); ErrorCode, with
	// Status "error", one envelope code.
	Status, ErrorCode string
	// From and To bound when the calls started: From <= start < To; a
	// zero time does not bound.
	From, To time.Time
	// Limit is how many rows at most, 1 to maxDecisions.
	Limit int
}

// Dashboard is the http.Handler of "/" and Prefix.
type Dashboard struct {
	opts   Options
	static http.Handler
	// tokens maps the SHA-256 of each token in Options.Tokens to its
	// identity and session key: a sign-in looks the typed token's digest
	// up, and a session holds only the digest of the token it was made
	// with, and a MAC under that token's key. SetTokens replaces it
	// (tokensMu); needLogin says whether New was given any, which a
	// later set never changes.
	tokens    map[[32]byte]signer
	tokensMu  sync.RWMutex
	needLogin bool
	sessions  Sessions
	// openCSRF is the CSRF token of the page when no login is needed.
	openCSRF string
	// hub owns the live event streams (events.go).
	hub *hub
}

// Sessions keeps signed-in sessions, each known by the SHA-256 of its
// cookie. The host keeps them in the board's store, so that every host
// sharing the store honours a sign-in and a sign-out, behind a load
// balancer too, and a restart keeps them.
type Sessions interface {
	// Create stores s after dropping the sessions not seen since
	// idleBefore, then keeps at most keep of s.Identity's sessions, its
	// most recently seen; it never drops another identity's session.
	Create(ctx context.Context, s Session, idleBefore time.Time, keep int) error
	// Get returns the session whose cookie hashes to idHash (false: none).
	Get(ctx context.Context, idHash string) (Session, bool, error)
	// Touch records a use at seen.
	Touch(ctx context.Context, idHash string, seen time.Time) error
	// Delete ends the session.
	Delete(ctx context.Context, idHash string) error
}

// Session is a signed-in session: the identity its token named, the
// SHA-256 hex of that token (the session ends when the token is no longer
// configured), its CSRF token, and MAC, which binds all of these and
// Created to the cookie's digest under the token's session key (see
// signer).
type Session struct {
	IDHash    string
	Identity  string
	TokenHash string
	CSRF      string
	MAC       string
	Created   time.Time
	Seen      time.Time
}

// signer is what a configured token signs sessions in as: its identity,
// and the key of its sessions' MACs.
//
// The key is HMAC-SHA256(token, sessionKeyLabel): derived from the bearer
// token, which the store never holds (it holds the token's SHA-256, from
// which the key cannot be computed). So whoever can write the store — an
// operator of another host on a shared PostgreSQL without this token,
// anyone with the SQLite file — can neither copy a session's row under a
// cookie digest of their own (the MAC covers the digest) nor rewrite a row
// to name another identity or token (the MAC covers both, and the identity
// must be the one its token is configured for): the row signs no one in.
// The key is the same on every host configured with the token, so a
// session works on all hosts sharing the store, as a host-local key would
// not allow.
type signer struct {
	identity string
	key      []byte
}

// sessionKeyLabel separates the session keys from any other use of a
// token; the version lets a later scheme retire these MACs.
const sessionKeyLabel = "plugboard dashboard session v1"

// mac is the session's MAC: HMAC-SHA256 under key over the
// length-prefixed cookie digest, identity, token digest, CSRF token and
// creation time (in microseconds, what the store keeps).
func (s Session) mac(key []byte) string {
	m := hmac.New(sha256.New, key)
	for _, part := range []string{s.IDHash, s.Identity, s.TokenHash, s.CSRF, strconv.FormatInt(s.Created.UnixMicro(), 10)} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		m.Write(n[:])
		m.Write([]byte(part))
	}
	return hex.EncodeToString(m.Sum(nil))
}

// touchEvery is how stale a session's seen time may get before a request
// writes it again: one write a minute per session, not one per request.
const touchEvery = time.Minute

// New returns the dashboard.
func New(opts Options) *Dashboard {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	d := &Dashboard{opts: opts, static: http.StripPrefix(Prefix, http.FileServerFS(sub)),
		sessions: opts.Sessions, openCSRF: randomHex()}
	d.hub = newHub(d)
	if d.sessions == nil {
		d.sessions = &memorySessions{m: map[string]Session{}}
	}
	d.SetTokens(opts.Tokens)
	d.needLogin = d.tokens != nil
	return d
}

// SetTokens replaces the tokens that may sign in, as Options.Tokens (the
// agents file reloaded): a session made with a token no longer among them,
// or now another identity's, ends at its next request. Whether the page
// needs a sign-in stays as New decided, so a dashboard left with no token
// signs nobody in rather than opening to everyone.
func (d *Dashboard) SetTokens(tokens map[string]string) {
	var m map[[32]byte]signer
	for tok, id := range tokens {
		if tok != "" {
			if m == nil {
				m = map[[32]byte]signer{}
			}
			k := hmac.New(sha256.New, []byte(tok))
			k.Write([]byte(sessionKeyLabel))
			m[sha256.Sum256([]byte(tok))] = signer{identity: id, key: k.Sum(nil)}
		}
	}
	d.tokensMu.Lock()
	d.tokens = m
	d.tokensMu.Unlock()
}

// signerOf returns the signer of the token whose SHA-256 is sum.
func (d *Dashboard) signerOf(sum [32]byte) (signer, bool) {
	d.tokensMu.RLock()
	defer d.tokensMu.RUnlock()
	sg, ok := d.tokens[sum]
	return sg, ok
}

// loginRequired reports whether the page needs a sign-in.
func (d *Dashboard) loginRequired() bool { return d.needLogin }

// digest is the hex SHA-256 of s.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func randomHex() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// Handles reports whether path is the dashboard's.
func (d *Dashboard) Handles(path string) bool { return path == "/" || strings.HasPrefix(path, Prefix) }

// ServeHTTP implements http.Handler.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The page must not be framed by another site, nor sniffed.
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	switch {
	case r.URL.Path == "/":
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(indexPage)
	case strings.HasPrefix(r.URL.Path, apiPath):
		d.api(w, r, strings.TrimPrefix(r.URL.Path, apiPath))
	default:
		// The page names its scripts and styles with the assets' digest
		// (?v=): those URLs never change meaning, so the browser keeps them
		// for a year; any other URL of an asset is revalidated by its ETag.
		if r.URL.Query().Get("v") == assetVersion {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		w.Header().Set("ETag", `"`+assetVersion+`"`)
		d.static.ServeHTTP(w, r)
	}
}

// assetVersion is a digest of every embedded asset, and indexPage the page
// with each script and style sheet named by it (?v=assetVersion), so a
// new build's page loads the new files and a browser caches them for good.
var assetVersion, indexPage = versionAssets()

func versionAssets() (string, []byte) {
	sum := sha256.New()
	err := fs.WalkDir(assets, "assets", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := assets.ReadFile(path)
		sum.Write([]byte(path))
		sum.Write(b)
		return err
	})
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	v := hex.EncodeToString(sum.Sum(nil))[:16]
	page, err := assets.ReadFile("assets/index.html")
	if err != nil {
		panic(err)
	}
	for _, ext := range []string{".js\"", ".css\""} {
		page = bytes.ReplaceAll(page, []byte(ext), []byte(strings.TrimSuffix(ext, `"`)+"?v="+v+`"`))
	}
	return v, page
}

// presented returns the digests of the session cookies r carries, each
// once; none when it carries more than maxSessionCookies (each costs a
// read of the store).
//
// A browser sends every cookie of the name whose domain and path match,
// the longest path first, so a request may carry cookies this dashboard
// never set: another port of the same host name (cookies ignore ports) or
// a sibling subdomain can plant one with a longer path or a parent domain,
// and the server cannot clear it (it does not know that path or domain).
// Reading only the first would let a planted cookie shadow the session
// the browser signed in with. So all are read: see who and login.
func presented(r *http.Request) []string {
	cookies := r.CookiesNamed(CookieName)
	if len(cookies) > maxSessionCookies {
		return nil
	}
	var out []string
	for _, c := range cookies {
		if c.Value == "" {
			continue
		}
		if h := digest(c.Value); !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// who returns the signed-in identity and its CSRF token, or "" when the
// request has no valid session (and a login is needed), or when it
// presents more than one valid session: one of them was planted beside the
// other (cookie tossing), and acting as either could act for the wrong
// person; the page then asks to sign in, which ends both.
func (d *Dashboard) who(r *http.Request) (identity, csrf string, err error) {
	if !d.loginRequired() {
		return d.opts.Local.ID, d.openCSRF, nil
	}
	ctx := r.Context()
	var found []Session
	for _, idHash := range presented(r) {
		s, ok, err := d.valid(ctx, idHash)
		if err != nil {
			return "", "", err
		}
		if ok {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		if len(found) > 1 {
			d.opts.Logger.Warn("dashboard request with several live sessions refused: a cookie may have been planted by another site",
				"identities", []string{found[0].Identity, found[1].Identity})
		}
		return "", "", nil
	}
	s := found[0]
	if time.Since(s.Seen) > touchEvery {
		if err := d.sessions.Touch(ctx, s.IDHash, time.Now()); err != nil {
			return "", "", err
		}
	}
	return s.Identity, s.CSRF, nil
}

// valid returns the session whose cookie hashes to idHash if it is valid:
// made with a token still configured for the same identity, its MAC under
// that token's key right (so not copied under another cookie's digest nor
// rewritten in the store), neither idle for sessionIdle nor older than
// sessionLifetime. A session found invalid is ended.
func (d *Dashboard) valid(ctx context.Context, idHash string) (Session, bool, error) {
	s, ok, err := d.sessions.Get(ctx, idHash)
	if err != nil || !ok {
		return Session{}, false, err
	}
	var tokenSum [32]byte
	if b, err := hex.DecodeString(s.TokenHash); err == nil && len(b) == len(tokenSum) {
		copy(tokenSum[:], b)
	}
	sg, configured := d.signerOf(tokenSum)
	if !configured || sg.identity != s.Identity ||
		!hmac.Equal([]byte(s.MAC), []byte(s.mac(sg.key))) ||
		time.Since(s.Seen) > sessionIdle || time.Since(s.Created) > sessionLifetime {
		return Session{}, false, d.sessions.Delete(ctx, idHash)
	}
	return s, true, nil
}

// caller is identity's caller.
func (d *Dashboard) caller(identity string) *abi.Caller {
	if d.opts.Local != nil && identity == d.opts.Local.ID {
		return d.opts.Local
	}
	if d.opts.Callers != nil {
		if c := d.opts.Callers(identity); c != nil {
			return c
		}
	}
	return &abi.Caller{ID: identity}
}

// operator reports whether c may read what only the operator reads.
func (d *Dashboard) operator(c *abi.Caller) bool {
	return (d.opts.Local != nil && c.ID == d.opts.Local.ID) || c.Role == policy.Supervisor
}

func (d *Dashboard) api(w http.ResponseWriter, r *http.Request, name string) {
	w.Header().Set("Cache-Control", "no-store")
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	}
	switch name {
	case "login":
		d.login(w, r)
		return
	}
	identity, csrf, err := d.who(r)
	if err != nil {
		d.sessionsUnavailable(w, "the dashboard's sessions cannot be read", err)
		return
	}
	if name == "me" {
		if identity == "" {
			writeJSON(w, http.StatusOK, map[string]any{"signed_in": false, "login_required": true})
			return
		}
		c := d.caller(identity)
		writeJSON(w, http.StatusOK, map[string]any{"signed_in": true, "login_required": d.loginRequired(),
			"identity": c.ID, "role": c.Role, "operator": d.operator(c), "csrf": csrf})
		return
	}
	if identity == "" {
		writeEnvelope(w, http.StatusUnauthorized, abi.NewEnvelope(abi.CodePermissionDenied, "sign in first",
			"open the dashboard and sign in with your bearer token"))
		return
	}
	if r.Method != http.MethodGet {
		// SameSite=Strict keeps the cookie off other sites' requests, the
		// JSON content type (RequestGuard) off simple cross-site posts; the
		// token, which only the page can read, settles it.
		got := r.Header.Get(CSRFHeader)
		if subtle.ConstantTimeCompare([]byte(got), []byte(csrf)) != 1 {
			writeEnvelope(w, http.StatusForbidden, abi.NewEnvelope(abi.CodePermissionDenied, "missing or wrong CSRF token",
				"reload the dashboard and try again"))
			return
		}
	}
	c := d.caller(identity)
	ctx := r.Context()
	switch name {
	case "logout":
		d.logout(w, r)
	case "tools":
		writeJSON(w, http.StatusOK, map[string]any{"tools": d.opts.Tools(c)})
	case "call":
		if r.Method != http.MethodPost {
			writeEnvelope(w, http.StatusMethodNotAllowed, abi.NewEnvelope(abi.CodeInvalidArgument, "use POST", "POST {tool, arguments}"))
			return
		}
		var body struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Tool == "" {
			writeEnvelope(w, http.StatusBadRequest, abi.NewEnvelope(abi.CodeInvalidArgument, "the body is not {tool, arguments}",
				`send {"tool": NAME, "arguments": {...}}`))
			return
		}
		if len(body.Arguments) == 0 || string(body.Arguments) == "null" {
			body.Arguments = json.RawMessage("{}")
		}
		res, env := d.opts.Call(ctx, c, body.Tool, body.Arguments)
		if env != nil {
			writeEnvelope(w, http.StatusOK, env)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": res})
	case "events":
		d.events(w, r, identity, c)
	case "board":
		d.board(w, r, c)
	case "decisions", "decision", "inbox", "inbox/read", "inbox/reply", "plugins", "hosts", "projects", "projects/repos":
		if !d.operator(c) {
			writeEnvelope(w, http.StatusForbidden, abi.NewEnvelope(abi.CodePermissionDenied,
				"only the operator or a SUPERVISOR may read "+name, "sign in with the operator's token"))
			return
		}
		d.operatorAPI(w, r, name, c)
	default:
		writeEnvelope(w, http.StatusNotFound, abi.NewEnvelope(abi.CodeNotFound, "no dashboard API "+name, "reload the dashboard"))
	}
}

func (d *Dashboard) operatorAPI(w http.ResponseWriter, r *http.Request, name string, c *abi.Caller) {
	ctx := r.Context()
	var out any
	var err error
	switch name {
	case "decisions":
		// A refused filter is answered like a refused tool call (200, the
		// envelope): the page shows it, the browser logs no failed request.
		f, env := decisionQuery(r.URL.Query())
		if env != nil {
			writeEnvelope(w, http.StatusOK, env)
			return
		}
		out, err = d.opts.Decisions(ctx, f)
	case "decision":
		id, env := decisionID(r.URL.Query())
		if env != nil {
			writeEnvelope(w, http.StatusOK, env)
			return
		}
		out, err = d.opts.Decision(ctx, id)
	case "inbox":
		out, err = d.opts.Inbox(ctx, r.URL.Query().Get("include_read") == "true")
	case "inbox/read", "inbox/reply":
		var body struct {
			MailID string `json:"mail_id"`
			Body   string `json:"body"`
		}
		if e := json.NewDecoder(r.Body).Decode(&body); e != nil {
			writeEnvelope(w, http.StatusBadRequest, abi.NewEnvelope(abi.CodeInvalidArgument, "the body is not {mail_id, body}", "reload the dashboard"))
			return
		}
		if name == "inbox/read" {
			out, err = d.opts.ReadMail(ctx, body.MailID)
		} else {
			out, err = d.opts.ReplyMail(ctx, body.MailID, body.Body)
		}
	case "plugins":
		out = d.opts.Plugins(ctx)
	case "projects", "projects/repos":
		out, err = d.setUpProject(r, name, c)
	case "hosts":
		if d.opts.Hosts == nil {
			out = []any{}
		} else {
			out, err = d.opts.Hosts(ctx)
		}
	}
	if err != nil {
		var env *abi.Envelope
		if !errors.As(err, &env) {
			env = abi.NewEnvelope(abi.CodeInternal, err.Error(), "check the host's log")
		}
		writeEnvelope(w, http.StatusOK, env)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": out})
}

// login checks a bearer token and sets the session cookie.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeEnvelope(w, http.StatusMethodNotAllowed, abi.NewEnvelope(abi.CodeInvalidArgument, "use POST", "POST {token}"))
		return
	}
	if !d.loginRequired() {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
		return
	}
	var body struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeEnvelope(w, http.StatusBadRequest, abi.NewEnvelope(abi.CodeInvalidArgument, "the body is not {token}", "type the bearer token"))
		return
	}
	// A map lookup by the digest: its timing tells nothing of the token.
	tokenSum := sha256.Sum256([]byte(strings.TrimSpace(body.Token)))
	sg, ok := d.signerOf(tokenSum)
	if !ok {
		// Slow guessing down a little; the token space does the rest.
		time.Sleep(200 * time.Millisecond)
		writeEnvelope(w, http.StatusUnauthorized, abi.NewEnvelope(abi.CodePermissionDenied, "that token is not valid",
			"use the token plugboard serve was given (--http-token-file, $PLUGBOARD_HTTP_TOKEN) or an agent's from --agents"))
		return
	}
	// Every session the browser presents ends here, whoever's it is: a
	// session planted by another site (cookie tossing) must neither
	// outlive this sign-in nor stand beside the new one, and the browser's
	// own earlier one is replaced.
	for _, old := range presented(r) {
		if err := d.sessions.Delete(r.Context(), old); err != nil {
			d.sessionsUnavailable(w, "the sign-in could not be stored", err)
			return
		}
	}
	// Always a new random session id, never one the request brought: a
	// value an attacker set beforehand (fixation) is never signed in. The
	// creation time is kept to the microsecond, as the store keeps it, so
	// the MAC over it checks out after the round trip.
	id, now := randomHex(), time.Now().UTC().Truncate(time.Microsecond)
	identity := sg.identity
	sess := Session{IDHash: digest(id), Identity: identity, TokenHash: hex.EncodeToString(tokenSum[:]), CSRF: randomHex(),
		Created: now, Seen: now}
	sess.MAC = sess.mac(sg.key)
	if err := d.sessions.Create(r.Context(), sess, now.Add(-sessionIdle), maxSessionsPerIdentity); err != nil {
		d.sessionsUnavailable(w, "the sign-in could not be stored", err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(sessionLifetime / time.Second)})
	d.opts.Logger.Info("dashboard sign-in", "identity", identity)
	// The page keeps this session's CSRF token in its origin's storage,
	// which no other origin can write: a session the page did not start
	// (a cookie planted before it signed in) then shows the sign-in form
	// instead of acting as whoever planted it (app.js).
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "csrf": sess.CSRF})
}

// logout ends every session the browser presents on every host sharing
// the store, and clears the cookie.
func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	for _, idHash := range presented(r) {
		if err := d.sessions.Delete(r.Context(), idHash); err != nil {
			d.sessionsUnavailable(w, "the sign-out could not be stored", err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// sessionsUnavailable answers a request the session store failed: a
// retryable envelope, since the store (the board's database) is usually
// back in a moment, and a warning in the host's log for the operator.
func (d *Dashboard) sessionsUnavailable(w http.ResponseWriter, what string, err error) {
	d.opts.Logger.Warn("dashboard sessions unavailable", "what", what, "err", err)
	env := abi.NewEnvelope(abi.CodeUnavailable, what+": "+err.Error(),
		"try again in a moment; if it persists, check the board's store in the host's log")
	env.Retryable = true
	writeEnvelope(w, http.StatusServiceUnavailable, env)
}

// memorySessions keeps sessions in this process (Options.Sessions nil).
type memorySessions struct {
	mu sync.Mutex
	m  map[string]Session
}

func (m *memorySessions) Create(_ context.Context, s Session, idleBefore time.Time, keep int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, old := range m.m {
		if old.Seen.Before(idleBefore) {
			delete(m.m, k)
		}
	}
	m.m[s.IDHash] = s
	for {
		n, oldest := 0, ""
		for k, old := range m.m {
			if old.Identity != s.Identity {
				continue
			}
			n++
			if oldest == "" || old.Seen.Before(m.m[oldest].Seen) {
				oldest = k
			}
		}
		if n <= keep {
			return nil
		}
		delete(m.m, oldest)
	}
}

func (m *memorySessions) Get(_ context.Context, idHash string) (Session, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.m[idHash]
	return s, ok, nil
}

func (m *memorySessions) Touch(_ context.Context, idHash string, seen time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.m[idHash]; ok && s.Seen.Before(seen) {
		s.Seen = seen
		m.m[idHash] = s
	}
	return nil
}

func (m *memorySessions) Delete(_ context.Context, idHash string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, idHash)
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeEnvelope(w http.ResponseWriter, status int, env *abi.Envelope) {
	writeJSON(w, status, map[string]any{"ok": false, "error": env})
}
