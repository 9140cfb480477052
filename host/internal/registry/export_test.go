package registry

// ReservedCount is the number of reserved names, for the test that holds
// the table to the first-party plugins.
func ReservedCount() int { return len(reservedOwner) }
