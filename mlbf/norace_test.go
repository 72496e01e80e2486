//go:build !race

package mlbf

const raceEnabled = false
