package main

import (
	"fmt"
	"io"
	"strings"
)

// printRoles shows the agent types a plugin's manifest says it is meant
// for (abi.Manifest.Roles), and that the declaration grants nothing by
// itself: the operator's agents file decides (host/internal/policy). A
// manifest declaring none prints nothing.
func printRoles(w io.Writer, roles []string) {
	if len(roles) == 0 {
		return
	}
	fmt.Fprintf(w, "roles:        %s (meant for; granted only where the agents file adds \"declared\" to a type, e.g. permissions.%s.add)\n",
		strings.Join(roles, ", "), roles[0])
}
