// Package pluginsrc brings plugins that are not in the plugin folders —
// a local file, an https:// URL or an OCI artifact (oci://registry/repo:tag
// or @sha256:…) named by plugins.settings.NAME.source — and pins their bytes
// in a lockfile (plugboard.lock, next to the configuration file): NAME →
// {source, sha256, size}. A host loads a source plugin only when its bytes
// have the sha256 the lockfile pins; fetched bytes are cached under
// DATA/sources/<sha256>.wasm, so a restart needs no network while the lock
// matches.
//
// Fetching uses net/http alone: https with the system's roots (SSL_CERT_FILE
// and SSL_CERT_DIR are honoured), a timeout and a size cap; OCI is the
// distribution API (a manifest, then the wasm layer's blob, each digest
// checked), with anonymous bearer tokens when the registry asks for them.
// Plain http is refused, also as a redirect's target, before any request
// goes to it; a redirect to another origin (scheme, host, port) is
// followed without the registry's token.
package pluginsrc

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
)

// Kind is what a source names.
type Kind int

const (
	// File is a local .wasm file.
	File Kind = iota
	// HTTPS is a URL fetched with GET.
	HTTPS
	// OCI is an artifact in an OCI registry.
	OCI
)

func (k Kind) String() string {
	switch k {
	case HTTPS:
		return "https"
	case OCI:
		return "oci"
	}
	return "file"
}

// Source is a parsed plugins.settings.NAME.source.
type Source struct {
	Kind Kind
	// Path is a File source's absolute path.
	Path string
	// URL is an HTTPS source's URL.
	URL string
	// Registry (host[:port]), Repository and Tag or Digest
	// ("sha256:HEX") name an OCI artifact.
	Registry, Repository, Tag, Digest string
}

// String is the source as a lockfile records it: the absolute path, the
// URL, or oci://registry/repository:tag (or @digest).
func (s Source) String() string {
	switch s.Kind {
	case HTTPS:
		return s.URL
	case OCI:
		ref := "oci://" + s.Registry + "/" + s.Repository
		if s.Tag != "" {
			ref += ":" + s.Tag
		}
		if s.Digest != "" {
			ref += "@" + s.Digest
		}
		return ref
	}
	return s.Path
}

// Remote reports whether the source is fetched over the network.
func (s Source) Remote() bool { return s.Kind != File }

var (
	// repoComponent is the distribution spec's path component.
	repoComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$`)
	tagPattern    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
	digestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

// Parse reads a source: "https://…", "oci://registry/repo:tag" or
// "oci://registry/repo@sha256:…", or a file path, absolute or relative to
// base (the configuration file's directory).
func Parse(s, base string) (Source, error) {
	if strings.TrimSpace(s) == "" {
		return Source{}, errors.New("is empty; give a file path, an https:// URL or an oci:// reference")
	}
	scheme, rest, hasScheme := strings.Cut(s, "://")
	if !hasScheme || strings.ContainsAny(scheme, `/\.`) {
		p := s
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		return Source{Kind: File, Path: filepath.Clean(p)}, nil
	}
	switch strings.ToLower(scheme) {
	case "https":
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return Source{}, fmt.Errorf("%q is not a URL with a host", s)
		}
		if u.User != nil {
			return Source{}, fmt.Errorf("%q holds credentials; a source URL must not (it is written to the lockfile)", redactURL(u))
		}
		u.Fragment = ""
		return Source{Kind: HTTPS, URL: u.String()}, nil
	case "http":
		return Source{}, fmt.Errorf("%q is plain http, which anyone on the way can change; use https://", s)
	case "oci":
		return parseOCI(s, rest)
	}
	return Source{}, fmt.Errorf("unknown scheme %q in %q: give a file path, an https:// URL or an oci:// reference", scheme, s)
}

func redactURL(u *url.URL) string {
	c := *u
	c.User = url.User("***")
	return c.String()
}

func parseOCI(s, rest string) (Source, error) {
	bad := func(why string) (Source, error) {
		return Source{}, fmt.Errorf("%q is not an OCI reference (oci://REGISTRY/REPOSITORY:TAG or @sha256:DIGEST): %s", s, why)
	}
	registry, path, ok := strings.Cut(rest, "/")
	if !ok || registry == "" || path == "" {
		return bad("no repository")
	}
	if host, port, err := net.SplitHostPort(registry); err == nil {
		if host == "" || port == "" {
			return bad("registry " + registry)
		}
	} else if strings.Contains(registry, ":") {
		return bad("registry " + registry)
	}
	src := Source{Kind: OCI, Registry: strings.ToLower(registry)}
	if i := strings.Index(path, "@"); i >= 0 {
		src.Digest, path = path[i+1:], path[:i]
		if !digestPattern.MatchString(src.Digest) {
			return bad("digest " + src.Digest + " (want sha256: and 64 lowercase hex digits)")
		}
	}
	if i := strings.LastIndex(path, ":"); i >= 0 && !strings.Contains(path[i:], "/") {
		src.Tag, path = path[i+1:], path[:i]
		if !tagPattern.MatchString(src.Tag) {
			return bad("tag " + src.Tag)
		}
	}
	if src.Tag == "" && src.Digest == "" {
		return bad("no :TAG or @sha256:DIGEST; name the version to pin")
	}
	for _, c := range strings.Split(path, "/") {
		if !repoComponent.MatchString(c) {
			return bad(fmt.Sprintf("repository %q (lowercase letters, digits and . _ - between them)", path))
		}
	}
	src.Repository = path
	// Docker Hub's references name docker.io; its API is elsewhere, and an
	// official image's repository has an implicit library/.
	if src.Registry == "docker.io" || src.Registry == "index.docker.io" {
		src.Registry = "docker.io"
		if !strings.Contains(src.Repository, "/") {
			src.Repository = "library/" + src.Repository
		}
	}
	return src, nil
}

// apiHost is where the registry's API answers.
func (s Source) apiHost() string {
	if s.Registry == "docker.io" {
		return "registry-1.docker.io"
	}
	return s.Registry
}
