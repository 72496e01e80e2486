//go:build !race

package redisfrontier

const raceEnabled = false
