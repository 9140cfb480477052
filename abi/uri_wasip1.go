//go:build wasip1

package abi

// absoluteURI is schemeURI in a WebAssembly guest, which thus does not link
// net/url: its init (net/netip, unique) cost every plugin about 117 KB
// (issue 15). The host validates every manifest with net/url (uri.go).
func absoluteURI(s string) bool { return schemeURI(s) }
