//go:build !race

package hostile_test

const raceEnabled = false
