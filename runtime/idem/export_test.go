package idem

// CacheKeyOf is cacheKey, for the tests of package idem_test.
var CacheKeyOf = cacheKey
