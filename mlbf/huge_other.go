//go:build !linux

package mlbf

// adviseHugePages is a no-op where transparent huge pages cannot be
// requested.
func adviseHugePages([]uint64) {}
