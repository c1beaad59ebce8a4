package origin

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/depot-registry/depot/origin/service/backup"
	"github.com/depot-registry/depot/shared/blob/fs"
)

// PrepareRestore unpacks the backup archive at path into the fresh data
// directory dataDir (depot admin restore): its blobs into the blob store,
// its metadata aside for the origin's first start, which installs it. A
// directory that holds anything is refused; one that fails is removed.
func PrepareRestore(ctx context.Context, path, dataDir string, allowMissing bool, progress func(blobs, bytes int64)) (p backup.Prepared, err error) {
	fresh, existed := emptyDir(dataDir)
	if !fresh {
		return p, fmt.Errorf("%s is not empty: a backup is restored into a fresh data directory (a running cluster restores with POST /api/v1/admin/backups/:id/restore)", dataDir)
	}
	defer func() {
		if err != nil {
			removeFresh(dataDir, existed)
		}
	}()
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return p, err
	}
	store, err := fs.New(filepath.Join(dataDir, "blobs"))
	if err != nil {
		return p, err
	}
	open := func() (io.ReadCloser, error) { return os.Open(path) }
	return backup.Prepare(ctx, open, dataDir, store, allowMissing, progress)
}
