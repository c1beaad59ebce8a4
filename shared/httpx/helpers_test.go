package httpx

import (
	"net/http"
	"net/http/httptest"
)

func newReq(url string) *http.Request { return httptest.NewRequest("GET", url, nil) }
