package registry_test

// testCacheKey signs the compile cache the package's tests share with each
// other (and with other packages' tests, under the same key): a key of
// their own each would make them discard each other's entries.
var testCacheKey = []byte("plugboard-test-cache-key-32bytes")
