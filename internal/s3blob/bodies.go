package s3blob

import "net/http"

// objectBody tells, for blob.BoundBodies, a successful GET of an object's
// bytes from every other response (listings, errors, bucket location,
// multipart answers), whose bodies get blob.MaxControlBody.
func objectBody(req *http.Request, resp *http.Response) bool {
	return req.Method == http.MethodGet && resp.StatusCode/100 == 2 && !bucketQuery(req)
}

// bucketQuery tells a request on the bucket (a listing, its location, its
// uploads) from a GET of an object's bytes.
func bucketQuery(req *http.Request) bool {
	q := req.URL.Query()
	for _, k := range []string{"list-type", "prefix", "delimiter", "max-keys", "continuation-token", "location", "uploads", "versions"} {
		if q.Has(k) {
			return true
		}
	}
	return false
}
