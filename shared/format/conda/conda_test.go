package conda

import (
	"bytes"
	"testing"
)

func FuzzReadIndex(f *testing.F) {
	f.Add([]byte("BZh91AY&SY"), false)
	f.Add([]byte("PK\x03\x04"), true)
	f.Fuzz(func(t *testing.T, pkg []byte, isConda bool) {
		_, _ = readIndex(t.Context(), bytes.NewReader(pkg), int64(len(pkg)), isConda)
	})
}
