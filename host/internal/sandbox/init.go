package sandbox

// init makes every program that links this package a launcher: the host
// binary, and the test binaries of the packages that start attempts
// (through procsup), which re-execute themselves as the launcher just as
// the host does. A program started with any other first argument is not
// affected. It runs before main and before the init of every package that
// imports this one (only this package's own few dependencies initialise
// first), so the confined program inherits nothing the host set up.
func init() { Main() }
