package gcsblob

import "net/http"

// objectBody tells, for blob.BoundBodies, a successful download of an
// object's bytes (alt=media) from every other response (listings, object
// metadata, errors), whose bodies get blob.MaxControlBody.
func objectBody(req *http.Request, resp *http.Response) bool {
	return req.Method == http.MethodGet && resp.StatusCode/100 == 2 && req.URL.Query().Get("alt") == "media"
}
