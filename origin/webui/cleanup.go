package webui

import (
	"net/http"

	"github.com/depot-registry/depot/origin/app"
)

// The cleanup page (administrators): the retention rules' default and
// last run, a preview of what they would delete now (a dry run), and a
// button that applies them and collects the garbage, showing what went.

const cleanupPath = Prefix + "/cleanup"

type cleanupPage struct {
	Status app.RetentionStatus
	// Result is what the last button did (nil: nothing asked yet).
	Result *app.CleanupResult
}

func (u *UI) cleanupView(w http.ResponseWriter, c *call, res *app.CleanupResult) error {
	st, err := u.d.App.RetentionStatus(c.r.Context(), c.p)
	if err != nil {
		return err
	}
	return u.render(w, c, 0, "cleanup", "Cleanup", cleanupPage{Status: st, Result: res})
}

func (u *UI) cleanup(w http.ResponseWriter, c *call) error { return u.cleanupView(w, c, nil) }

// runCleanup previews (action=preview) or applies the rules and collects.
func (u *UI) runCleanup(w http.ResponseWriter, c *call) error {
	res, err := u.d.App.Cleanup(c.r.Context(), c.p, c.r.PostForm.Get("action") == "preview")
	if err != nil {
		return u.after(w, c, err, "", cleanupPath)
	}
	return u.cleanupView(w, c, &res)
}
