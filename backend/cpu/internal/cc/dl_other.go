//go:build cgo && !linux

package cc

// memfdOff has no effect where there are no memory files.
var memfdOff bool

func useMemfd() bool { return false }

func openMemfd(data []byte) (*Library, error) { return nil, errNoMemfd }
