package board

// Access is what one attempt process is given to reach the board as
// itself, instead of the board's data directory: the variables that name
// an endpoint and a credential scoped to its attempt (PLUGBOARD_URL,
// PLUGBOARD_TOKEN), the TCP ports of that endpoint (which a sandbox with
// the network closed still lets it connect to), and Revoke, which ends the
// credential once the process has ended.
type Access struct {
	Env    []string
	Ports  []uint16
	Revoke func()
}

// AccessIssuer issues an Access for one process of attemptID (of taskID).
// The board calls it before each attempt process starts and calls the
// returned Revoke when that process has ended; an error refuses the start.
type AccessIssuer func(attemptID, taskID string) (Access, error)
