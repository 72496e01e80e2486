package main

import "strings"

// stringList is a repeatable flag of strings (--previous). Values set
// from a config file are replaced, not extended, by those on the command
// line, as regexpList's.
type stringList struct {
	dst        *[]string
	fromConfig bool // the values came from the config file
}

func (l *stringList) String() string {
	if l == nil || l.dst == nil {
		return ""
	}
	return strings.Join(*l.dst, " ")
}

func (l *stringList) Set(s string) error {
	if l.fromConfig {
		*l.dst, l.fromConfig = nil, false
	}
	*l.dst = append(*l.dst, s)
	return nil
}
