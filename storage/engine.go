package storage

// engine is what Store needs from an embedded key-value engine. Keys and
// values passed to ascend's callback are only valid during the call.
type engine interface {
	get(key []byte) ([]byte, error) // errNotFound when absent; the value is a copy
	write(fn func(Writer) error) error
	sync() error // make every written batch durable (Options.DeferSync)
	ascend(start, end []byte, fn func(key, value []byte) bool) error
	close() error
	name() string
}
