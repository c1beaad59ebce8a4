package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/depot-registry/depot/origin/service/gc"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

func (s *Server) stats(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	var st meta.Stats
	if err := s.view(func(tx *meta.Tx) error { var err error; st, err = tx.Stats(); return err }); err != nil {
		return err
	}
	var dl int64
	if s.d.Downloads != nil {
		dl = s.d.Downloads.Last24h()
	}
	return writeJSON(w, http.StatusOK, map[string]any{
		"repositories": st.Repositories, "artifacts": st.Artifacts, "total_size_bytes": st.TotalSizeBytes,
		"users": st.Users, "downloads_24h": dl})
}

// cleanup runs a garbage collection and answers what it removed. It
// runs to the end even if the caller stops waiting (a half-done sweep
// would only have to be done again).
func (s *Server) cleanup(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	if s.d.GC == nil {
		return apierr.New(apierr.Unavailable, "garbage collection is not available on this node")
	}
	res, err := s.d.GC.Run(context.WithoutCancel(r.Context()))
	if errors.Is(err, gc.ErrRunning) {
		return apierr.New(apierr.Conflict, "a garbage collection is running already; try again when it has finished")
	}
	if err != nil {
		return fmt.Errorf("garbage collection: %w", err)
	}
	return writeJSON(w, http.StatusOK, res)
}
