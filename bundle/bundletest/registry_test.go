package bundletest_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/bundle/bundletest"
)

// Start serves the registry API on 127.0.0.1; Stop stops it.
func TestStartStop(t *testing.T) {
	r := bundletest.Start(t)
	resp, err := http.Get("http://" + r.Addr + "/v2/")
	require.NoError(t, err, "GET /v2/ of the started registry")
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "oci://"+r.Addr+"/a/b:c", r.Ref("a/b:c"))
	r.Stop()
	r.Stop() // idempotent
	_, err = http.Get("http://" + r.Addr + "/v2/")
	assert.Error(t, err, "the stopped registry still answers")
}
