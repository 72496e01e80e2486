//go:build !race

package revisit

const raceEnabled = false
