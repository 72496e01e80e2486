//go:build race

package redisfrontier

// raceEnabled reports whether the tests run under the race detector: the
// statistical ones skip there and run in .ci/run's pass without it.
const raceEnabled = true
