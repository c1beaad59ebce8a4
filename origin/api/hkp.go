package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/signing"
)

// KeyServer answers the HKP key server protocol's lookups for the
// registry's OpenPGP signing keys, at /pks/lookup where gpg (gpg
// --keyserver hkp://depot.example.com --recv-keys <fingerprint>) and
// Maven's signature checks ask for the key of a signature: op=get
// answers the armored public key whose fingerprint ends with search
// (0x and 8, 16 or 40 hexadecimal digits), op=index lists them
// (machine-readable). Public keys only: anyone may ask.
func KeyServer(a *app.App) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		search := strings.ToUpper(strings.TrimPrefix(strings.TrimPrefix(q.Get("search"), "0x"), "0X"))
		op := q.Get("op")
		if (op != "get" && op != "index") || (len(search) != 8 && len(search) != 16 && len(search) != 40) || strings.Trim(search, "0123456789ABCDEF") != "" {
			http.Error(w, "op=get or op=index, and search=0x with 8, 16 or 40 hexadecimal digits of an OpenPGP key's fingerprint", http.StatusBadRequest)
			return
		}
		keys, err := a.SigningKeys(r.Context(), nil)
		if err != nil {
			http.Error(w, "the keys could not be read", http.StatusServiceUnavailable)
			return
		}
		for _, k := range keys {
			if k.Algorithm != signing.OpenPGP || !strings.HasSuffix(strings.ToUpper(k.Fingerprint), search) {
				continue
			}
			if op == "index" {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				fmt.Fprintf(w, "info:1:1\npub:%s:22:255:%d::\nuid:%s:%d::\n", k.Fingerprint, k.CreatedAt.Unix(),
					strings.ReplaceAll(k.Name, ":", "%3A"), k.CreatedAt.Unix())
				return
			}
			w.Header().Set("Content-Type", "application/pgp-keys")
			_, _ = w.Write([]byte(k.PublicKey))
			return
		}
		http.Error(w, "No keys found", http.StatusNotFound)
	})
}
