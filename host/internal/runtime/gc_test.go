package runtime_test

import goruntime "runtime"

// goruntimeGC forces a collection, which stops the world: it completes only
// if every goroutine, including one running guest code, reaches a safe point.
func goruntimeGC() { goruntime.GC() }
