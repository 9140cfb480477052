//go:build !wasip1

package abi

import "net/url"

// absoluteURI reports whether s parses as a URI with a scheme. Natively (the
// host, plugboard plugin build) it is net/url's verdict; a WebAssembly guest
// links uri_wasip1.go instead, so plugins do not carry net/url and the
// net/netip and unique packages it brings (issue 15).
func absoluteURI(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != ""
}
