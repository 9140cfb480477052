// Package e2e holds the end-to-end tests of the plugboard binary: they
// build cmd/plugboard (buildtest.Binary) and the plugins they need, then
// drive the real binary through exec — over stdio, HTTP, the dashboard in
// a browser, and its board and plugin commands. It has no code outside its
// tests; the unit tests of the command's own functions stay in package
// main, next to them.
package e2e
