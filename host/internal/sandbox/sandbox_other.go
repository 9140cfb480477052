//go:build !linux

package sandbox

import "errors"

const linuxOnly = "Landlock is Linux-only"

func probe() Status { return Status{Reason: linuxOnly} }

// launch still parses its arguments, so that a malformed command line is
// reported as such, then fails closed: there is nothing to confine with.
func launch(args []string) error {
	if _, _, err := parseArgs(args); err != nil {
		return err
	}
	return errors.New("cannot confine: " + linuxOnly)
}

func networkReason(int) string { return linuxOnly }
