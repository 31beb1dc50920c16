// Package syncbuffer is a bytes.Buffer that goroutines may write and read at once: what a
// process under test or a progress ticker writes while the test reads it.
package syncbuffer

import (
	"bytes"
	"sync"
)

// Buffer is safe for concurrent use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Len is how much was written so far.
func (s *Buffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// From is what was written from offset on.
func (s *Buffer) From(offset int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b.Bytes()[offset:])
}
