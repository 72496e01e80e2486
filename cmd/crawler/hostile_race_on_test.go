//go:build race

package main

// raceEnabled reports whether the tests run under the race detector, whose
// shadow memory inflates the RSS figures of TestCrawlHostile.
const raceEnabled = true
