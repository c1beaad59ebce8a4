package scan

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/vuln"
)

// MaxUpload bounds an upload of advisories (a zip of them).
const MaxUpload = 512 << 20

// ReadAdvisories reads the OSV records of an upload: a zip of OSV JSON
// files (every *.json in it, at any depth; other files are skipped: a
// README, the licences), or one record as JSON, or a JSON array of
// records. A record that is not a usable OSV record refuses the whole
// upload, naming it.
func ReadAdvisories(ctx context.Context, ra io.ReaderAt, size int64) ([]vuln.Advisory, error) {
	head := make([]byte, min(size, 4))
	if _, err := ra.ReadAt(head, 0); err != nil && err != io.EOF {
		return nil, err
	}
	if bytes.HasPrefix(head, []byte("PK\x03\x04")) {
		members, err := format.ReadZip(ctx, ra, size, format.ArchiveRules{What: "a zip of OSV records", All: true,
			Want:   func(name string) bool { return strings.EqualFold(path.Ext(name), ".json") },
			Limits: format.ArchiveLimits{Member: vuln.MaxRecord, Entries: 500_000, Unpacked: 4 << 30, Ratio: 200}})
		if err != nil {
			return nil, err
		}
		out := make([]vuln.Advisory, 0, len(members))
		for _, m := range members {
			a, err := vuln.Parse(m.Data)
			if err != nil {
				return nil, format.BadRequest("%s: %v", m.Name, err)
			}
			out = append(out, a)
		}
		return out, nil
	}
	raw, err := io.ReadAll(io.NewSectionReader(ra, 0, size))
	if err != nil {
		return nil, err
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, format.BadRequest("not a JSON array of OSV records: %v", err)
		}
		out := make([]vuln.Advisory, 0, len(list))
		for i, r := range list {
			a, err := vuln.Parse(r)
			if err != nil {
				return nil, format.BadRequest("record %d: %v", i, err)
			}
			out = append(out, a)
		}
		return out, nil
	}
	a, err := vuln.Parse(raw)
	if err != nil {
		return nil, format.BadRequest("not an OSV record, a JSON array of them or a zip of them: %v", err)
	}
	return []vuln.Advisory{a}, nil
}

// Describe is a load's source for the record: a file's name, or what
// came.
func Describe(name string, n int) string {
	if name == "" {
		return fmt.Sprintf("upload of %d records", n)
	}
	return fmt.Sprintf("%s (%d records)", path.Base(name), n)
}
