//go:build !race

package frontier_test

const raceEnabled = false
