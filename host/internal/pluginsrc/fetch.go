package pluginsrc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Defaults of a Fetcher.
const (
	// DefaultTimeout bounds one fetch: every request of it.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxBytes caps a plugin's size.
	DefaultMaxBytes = 256 << 20
	// maxManifestBytes caps an OCI manifest or index, and a token answer.
	maxManifestBytes = 4 << 20
)

// Media types of OCI manifests and of the layers that hold a module.
const (
	mediaOCIManifest    = "application/vnd.oci.image.manifest.v1+json"
	mediaOCIIndex       = "application/vnd.oci.image.index.v1+json"
	mediaDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	mediaDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
)

// WasmLayerTypes are the layer media types taken as the module when a
// manifest has several layers.
var WasmLayerTypes = []string{
	"application/vnd.wasm.content.layer.v1+wasm",
	"application/vnd.module.wasm.content.layer.v1+wasm",
	"application/wasm",
}

// Fetcher reads sources. The zero value is ready: https with the system's
// roots, DefaultTimeout, DefaultMaxBytes.
type Fetcher struct {
	// Client makes the requests (nil: a client with Timeout). Tests give
	// one trusting their server's certificate.
	Client *http.Client
	// Timeout bounds a whole fetch (0: DefaultTimeout).
	Timeout time.Duration
	// MaxBytes caps the module's size (0: DefaultMaxBytes).
	MaxBytes int64
}

// client is the Fetcher's client (or a default one) with the redirect
// policy of checkRedirect in place of the client's own: a test's client
// brings its certificates, never a looser policy.
func (f *Fetcher) client() *http.Client {
	var c http.Client
	if f != nil && f.Client != nil {
		c = *f.Client
	}
	c.CheckRedirect = checkRedirect
	return &c
}

// maxRedirects bounds a chain of redirects (net/http's default).
const maxRedirects = 10

// redirectError is a redirect refused before it was followed.
type redirectError struct {
	from, to *url.URL
	why      string
}

func (e *redirectError) Error() string {
	return fmt.Sprintf("GET %s was redirected to %s, %s; refused before any request to it", shownURL(e.from), shownURL(e.to), e.why)
}

// shownURL is u for an error: without credentials or query, which on a
// redirect target is often a signature (a CDN's signed URL).
func shownURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment = nil, "", false, ""
	return c.String()
}

// checkRedirect is called by net/http before it sends each redirected
// request, with the headers it copied from the first: the check has to be
// here, as a check of the final response comes after the plain request
// went out. Only https is followed (sources are https only, so a
// downgrade is never wanted), and credentials set on the first request
// go only to that request's origin (scheme, host and port). net/http's
// own rule keeps Authorization for the same host name or a subdomain of
// it, on any port and scheme: a registry's token would reach
// http://registry:8080 or a service on another port of its host.
func checkRedirect(req *http.Request, via []*http.Request) error {
	from := via[len(via)-1].URL
	if len(via) >= maxRedirects {
		return &redirectError{from: from, to: req.URL, why: fmt.Sprintf("the %dth redirect in a row", len(via))}
	}
	if req.URL.Scheme != "https" {
		return &redirectError{from: from, to: req.URL, why: "which is not https"}
	}
	if origin(req.URL) != origin(via[0].URL) {
		for _, h := range []string{"Authorization", "Cookie", "Proxy-Authorization"} {
			req.Header.Del(h)
		}
	}
	return nil
}

// origin is a URL's scheme, host name and port (the default port of its
// scheme when none is given), lowercased.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(net.JoinHostPort(u.Hostname(), port))
}

func (f *Fetcher) maxBytes() int64 {
	if f != nil && f.MaxBytes > 0 {
		return f.MaxBytes
	}
	return DefaultMaxBytes
}

// Fetch returns the module a source names: a File's content, an HTTPS
// URL's body, an OCI artifact's wasm layer (its digest checked, and the
// manifest's when the reference is a digest).
func (f *Fetcher) Fetch(ctx context.Context, src Source) ([]byte, error) {
	timeout := DefaultTimeout
	if f != nil && f.Timeout > 0 {
		timeout = f.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch src.Kind {
	case HTTPS:
		return f.fetchHTTPS(ctx, src.URL)
	case OCI:
		return f.fetchOCI(ctx, src)
	}
	return readFile(src.Path, f.maxBytes())
}

func readFile(path string, max int64) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return readCapped(file, max, path)
}

// readCapped reads r whole, refusing more than max bytes.
func readCapped(r io.Reader, max int64, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes, the cap", what, max)
	}
	return b, nil
}

// get sends one GET and returns the response when its status is 200;
// other statuses are errors naming the URL (without its query).
func (f *Fetcher) get(ctx context.Context, u string, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := f.client().Do(req)
	if err != nil {
		// A refused redirect is the whole story; net/http's wrapping
		// would name the target again, with its query.
		var re *redirectError
		if errors.As(err, &re) {
			return nil, re
		}
		return nil, err
	}
	return resp, nil
}

func statusError(resp *http.Response) error {
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	u := *resp.Request.URL
	u.RawQuery = ""
	text := strings.TrimSpace(string(msg))
	if text != "" {
		text = ": " + oneLine(text)
	}
	return fmt.Errorf("GET %s: %s%s", u.String(), resp.Status, text)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func (f *Fetcher) fetchHTTPS(ctx context.Context, u string) ([]byte, error) {
	resp, err := f.get(ctx, u, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(resp)
	}
	defer resp.Body.Close()
	if resp.Request.URL.Scheme != "https" {
		return nil, fmt.Errorf("GET %s was redirected to %s, which is not https", u, resp.Request.URL.Redacted())
	}
	if max := f.maxBytes(); resp.ContentLength > max {
		return nil, fmt.Errorf("%s is %d bytes, over the cap of %d", u, resp.ContentLength, max)
	}
	return readCapped(resp.Body, f.maxBytes(), u)
}

// ---- OCI ----

type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	Platform  *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform,omitempty"`
}

type manifest struct {
	MediaType string       `json:"mediaType"`
	Layers    []descriptor `json:"layers"`
	Manifests []descriptor `json:"manifests"`
}

// registry is one conversation with a registry: its base URL and the
// bearer token it handed out, if it asked for one.
type registry struct {
	f     *Fetcher
	base  string
	repo  string
	token string
}

func (f *Fetcher) fetchOCI(ctx context.Context, src Source) ([]byte, error) {
	r := &registry{f: f, base: "https://" + src.apiHost(), repo: src.Repository}
	ref := src.Tag
	if src.Digest != "" {
		ref = src.Digest
	}
	m, err := r.manifest(ctx, ref, src.Digest)
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) > 0 || m.MediaType == mediaOCIIndex || m.MediaType == mediaDockerList {
		d, err := pickManifest(m.Manifests)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		if m, err = r.manifest(ctx, d.Digest, d.Digest); err != nil {
			return nil, err
		}
	}
	layer, err := pickLayer(m.Layers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	if max := f.maxBytes(); layer.Size > max {
		return nil, fmt.Errorf("%s: the module layer is %d bytes, over the cap of %d", src, layer.Size, max)
	}
	resp, err := r.do(ctx, "/blobs/"+layer.Digest, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := readCapped(resp.Body, f.maxBytes(), src.String())
	if err != nil {
		return nil, err
	}
	if err := checkDigest(b, layer.Digest); err != nil {
		return nil, fmt.Errorf("%s: layer: %w", src, err)
	}
	return b, nil
}

// manifest fetches the manifest ref; want, when set, is the digest its
// bytes must have.
func (r *registry) manifest(ctx context.Context, ref, want string) (*manifest, error) {
	h := http.Header{"Accept": {strings.Join([]string{mediaOCIManifest, mediaDockerManifest, mediaOCIIndex, mediaDockerList}, ", ")}}
	resp, err := r.do(ctx, "/manifests/"+ref, h)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := readCapped(resp.Body, maxManifestBytes, "manifest "+ref)
	if err != nil {
		return nil, err
	}
	if want != "" {
		if err := checkDigest(b, want); err != nil {
			return nil, fmt.Errorf("manifest %s: %w", ref, err)
		}
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest %s is not JSON: %w", ref, err)
	}
	if m.MediaType == "" {
		m.MediaType = resp.Header.Get("Content-Type")
	}
	return &m, nil
}

// do GETs /v2/<repo><path>, answering a 401 with a Bearer challenge by
// asking its realm for an anonymous token once.
func (r *registry) do(ctx context.Context, path string, h http.Header) (*http.Response, error) {
	u := r.base + "/v2/" + r.repo + path
	for try := 0; ; try++ {
		hh := h.Clone()
		if hh == nil {
			hh = http.Header{}
		}
		if r.token != "" {
			hh.Set("Authorization", "Bearer "+r.token)
		}
		resp, err := r.f.get(ctx, u, hh)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusUnauthorized && try == 0 {
			challenge := resp.Header.Get("WWW-Authenticate")
			resp.Body.Close()
			if err := r.authenticate(ctx, challenge); err != nil {
				return nil, fmt.Errorf("GET %s: 401 Unauthorized; anonymous token: %w", u, err)
			}
			continue
		}
		if resp.StatusCode != http.StatusOK {
			return nil, statusError(resp)
		}
		return resp, nil
	}
}

// authenticate gets an anonymous token for the challenge (Bearer realm=…,
// service=…, scope=…).
func (r *registry) authenticate(ctx context.Context, challenge string) error {
	scheme, params, _ := strings.Cut(challenge, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return fmt.Errorf("the registry wants %q authentication; only anonymous bearer tokens are supported", scheme)
	}
	p := parseChallenge(params)
	realm, err := url.Parse(p["realm"])
	if err != nil || realm.Scheme != "https" || realm.Host == "" {
		return fmt.Errorf("token realm %q is not an https URL", p["realm"])
	}
	q := realm.Query()
	if s := p["service"]; s != "" {
		q.Set("service", s)
	}
	scope := p["scope"]
	if scope == "" {
		scope = "repository:" + r.repo + ":pull"
	}
	q.Set("scope", scope)
	realm.RawQuery = q.Encode()
	resp, err := r.f.get(ctx, realm.String(), nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return statusError(resp)
	}
	defer resp.Body.Close()
	b, err := readCapped(resp.Body, maxManifestBytes, "token")
	if err != nil {
		return err
	}
	var tok struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(b, &tok); err != nil {
		return fmt.Errorf("token answer is not JSON: %w", err)
	}
	r.token = tok.Token
	if r.token == "" {
		r.token = tok.AccessToken
	}
	if r.token == "" {
		return errors.New("the token answer holds no token")
	}
	return nil
}

// parseChallenge reads k="v", k2="v2" (quoted or bare values).
func parseChallenge(s string) map[string]string {
	out := map[string]string{}
	for s = strings.TrimSpace(s); s != ""; {
		k, rest, ok := strings.Cut(s, "=")
		if !ok {
			break
		}
		k = strings.ToLower(strings.TrimSpace(k))
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := 1
			for end < len(rest) && rest[end] != '"' {
				if rest[end] == '\\' {
					end++
				}
				end++
			}
			v = strings.ReplaceAll(rest[1:min(end, len(rest))], `\"`, `"`)
			rest = rest[min(end+1, len(rest)):]
		} else {
			v, rest, _ = strings.Cut(rest, ",")
			rest = "," + rest
		}
		out[k] = strings.TrimSpace(v)
		rest = strings.TrimSpace(rest)
		s = strings.TrimSpace(strings.TrimPrefix(rest, ","))
	}
	return out
}

// pickManifest chooses from an index the manifest of a wasm platform, or
// its only one.
func pickManifest(ds []descriptor) (descriptor, error) {
	for _, d := range ds {
		if p := d.Platform; p != nil && (p.Architecture == "wasm" || strings.HasPrefix(p.OS, "wasi")) {
			return d, nil
		}
	}
	if len(ds) == 1 {
		return ds[0], nil
	}
	return descriptor{}, fmt.Errorf("the index lists %d manifests and none for a wasm platform", len(ds))
}

// pickLayer chooses the layer of a wasm media type, or the only layer.
func pickLayer(ls []descriptor) (descriptor, error) {
	for _, l := range ls {
		for _, t := range WasmLayerTypes {
			if l.MediaType == t {
				return l, nil
			}
		}
	}
	if len(ls) == 1 {
		return ls[0], nil
	}
	return descriptor{}, fmt.Errorf("the manifest has %d layers and none of a wasm media type (%s)", len(ls), strings.Join(WasmLayerTypes, ", "))
}

func checkDigest(b []byte, digest string) error {
	alg, want, ok := strings.Cut(digest, ":")
	if !ok || alg != "sha256" {
		return fmt.Errorf("digest %q is not sha256", digest)
	}
	if got := Sum(b); got != want {
		return fmt.Errorf("content has sha256:%s, not the %s it is named by", got, digest)
	}
	return nil
}

// Sum is the lowercase hex sha256 of b.
func Sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
