package api_test

import (
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
)

func TestSmokeHarness(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	id := e.CreateRepo("files", "generic", false)
	e.Do("PUT", "/generic/files/pkg/1.0/a.txt", "Basic YWRtaW46YWRtaW4tU2VjcmV0LXB3MQ==", "hello").Want(201)
	e.Do("GET", "/api/v1/repositories/"+id, e.Admin, nil).Want(200)
}
