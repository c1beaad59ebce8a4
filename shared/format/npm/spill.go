package npm

import (
	"crypto/sha1"
	"crypto/sha512"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// spill is a tarball decoded into a scratch file of this node, hashed on
// the way in with the algorithms every publish needs, so checking it
// costs one more read at most and no memory.
type spill struct {
	f    *os.File
	name string // still to remove at Close where unlinking early failed
	size int64
	sums map[string][]byte
}

var _ Tarball = (*spill)(nil)

// spillTarball returns the Sink of the handlers: the data goes to a file
// in dir (the system's temp dir when empty), refused with 413 past max
// bytes as soon as they are read.
func spillTarball(dir string, max int64) Sink {
	return func(data io.Reader) (Tarball, error) {
		if dir != "" {
			if err := os.MkdirAll(dir, 0o750); err != nil {
				return nil, fmt.Errorf("npm: scratch dir: %w", err)
			}
		}
		f, err := os.CreateTemp(dir, "publish-*")
		if err != nil {
			return nil, fmt.Errorf("npm: scratch file: %w", err)
		}
		s := &spill{f: f}
		// Unlinked at once where the system allows it, so that nothing is
		// left behind whatever happens to the process.
		if os.Remove(f.Name()) != nil {
			s.name = f.Name()
		}
		h1, h512 := sha1.New(), sha512.New()
		n, err := io.Copy(io.MultiWriter(f, h1, h512), io.LimitReader(data, max+1))
		if err == nil && n > max {
			err = tarballTooLarge(max)
		}
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		s.size = n
		s.sums = map[string][]byte{"sha1": h1.Sum(nil), "sha512": h512.Sum(nil)}
		return s, nil
	}
}

func (s *spill) Size() int64 { return s.size }

// Sum hashes the file again only for an algorithm not computed on the
// way in (an integrity string naming sha256 or sha384).
func (s *spill) Sum(algo string) ([]byte, error) {
	if v, ok := s.sums[algo]; ok {
		return v, nil
	}
	return sum(algo, s.Reader())
}

func (s *spill) Reader() io.Reader { return io.NewSectionReader(s.f, 0, s.size) }

func (s *spill) Close() error {
	err := s.f.Close()
	if s.name != "" {
		_ = os.Remove(s.name)
	}
	return err
}

// spillDir is where this node's publishes spill their tarballs.
func spillDir(scratch string) string {
	if scratch == "" {
		return ""
	}
	return filepath.Join(scratch, "npm")
}
